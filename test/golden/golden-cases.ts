import type { Transformer } from '../../src/engine/transformers/transformer.ts';
import { aesSiv } from '../../src/engine/transformers/aes-siv.ts';
import { aesGcm } from '../../src/engine/transformers/aes-gcm.ts';
import { ff1 } from '../../src/engine/transformers/ff1.ts';
import { ff31 } from '../../src/engine/transformers/ff3-1.ts';
import { hmacSha256 } from '../../src/engine/transformers/hmac-sha256.ts';
import { mask } from '../../src/engine/transformers/mask.ts';
import { redact } from '../../src/engine/transformers/redact.ts';
import { deps, keysWith, ref } from '../engine/transformers/fixtures.ts';

/** A protected output pinned forever: if it changes, data already stored would stop unprotecting. */
export interface GoldenRecord {
  step: string;
  className: string;
  propertyName: string;
  value: string;
  protected: string;
}

const VALUES: Record<string, string[]> = {
  text: ['alice@example.com', '', 'Ωμέγα 😀', 'x'.repeat(40)],
  card: ['4111-1111-1111-1111', '5500005555555559', '6011000990139424'],
  id: ['QQ123456C', 'AB-99-ZZ-01'],
};

/** Every output format: each keyed step under key version 1 and, for AEAD/HMAC, a rotated version 2. */
export function goldenSteps(): { name: string; kind: keyof typeof VALUES; transformer: Transformer }[] {
  const keys = keysWith([
    ['siv', 'aes-siv', 64, 0x10], ['gcm', 'aes-gcm', 32, 0x20], ['fpe', 'ff1', 32, 0x30], ['ff3', 'ff3-1', 32, 0x40], ['mac', 'hmac-sha256', 32, 0x50],
  ]);
  for (const [id, type, size, seed] of [['siv', 'aes-siv', 64, 0x11], ['gcm', 'aes-gcm', 32, 0x21], ['mac', 'hmac-sha256', 32, 0x51]] as const) {
    keys.add(id, type, Uint8Array.from({ length: size }, (_, i) => (seed * 7 + i) & 0xff), '2026-02-01T00:00:00.000Z');
  }
  let counter = 0;
  const d = deps(keys, (b) => b.fill(++counter & 0xff));
  const fpe = { keepFirst: 0, keepLast: 0 };
  return [
    { name: 'aes-siv v1', kind: 'text', transformer: aesSiv({ key: ref('siv', 'aes-siv', 1) }, d) },
    { name: 'aes-siv v2', kind: 'text', transformer: aesSiv({ key: ref('siv', 'aes-siv') }, d) },
    { name: 'aes-siv shared binding', kind: 'text', transformer: aesSiv({ key: ref('siv', 'aes-siv', 1), binding: 'email-join' }, d) },
    { name: 'aes-gcm v1', kind: 'text', transformer: aesGcm({ key: ref('gcm', 'aes-gcm', 1) }, d) },
    { name: 'aes-gcm v2', kind: 'text', transformer: aesGcm({ key: ref('gcm', 'aes-gcm') }, d) },
    { name: 'hmac-sha256 v1', kind: 'text', transformer: hmacSha256({ key: ref('mac', 'hmac-sha256', 1), outputBytes: 32 }, d) },
    { name: 'hmac-sha256 v2 16 bytes', kind: 'text', transformer: hmacSha256({ key: ref('mac', 'hmac-sha256'), outputBytes: 16 }, d) },
    { name: 'ff1 digits', kind: 'card', transformer: ff1({ ...fpe, luhn: false, alphabet: 'digits', key: ref('fpe', 'ff1', 1) }, d) },
    { name: 'ff1 digits bin+last4', kind: 'card', transformer: ff1({ keepFirst: 6, keepLast: 4, luhn: false, alphabet: 'digits', key: ref('fpe', 'ff1', 1) }, d) },
    { name: 'ff1 digits luhn', kind: 'card', transformer: ff1({ keepFirst: 0, keepLast: 4, luhn: true, alphabet: 'digits', key: ref('fpe', 'ff1', 1) }, d) },
    { name: 'ff1 alnum-upper explicit tweak', kind: 'id', transformer: ff1({ ...fpe, luhn: false, alphabet: 'alnum-upper', tweakHex: '0011223344556677', key: ref('fpe', 'ff1', 1) }, d) },
    { name: 'ff3-1 digits', kind: 'card', transformer: ff31({ ...fpe, alphabet: 'digits', key: ref('ff3', 'ff3-1', 1) }, d) },
    { name: 'ff3-1 alnum-upper', kind: 'id', transformer: ff31({ ...fpe, alphabet: 'alnum-upper', key: ref('ff3', 'ff3-1', 1) }, d) },
    { name: 'mask last 4', kind: 'card', transformer: mask({ keepFirst: 0, keepLast: 4, char: '*', preserve: '-' }) },
    { name: 'redact', kind: 'text', transformer: redact({ value: '[REDACTED]' }) },
  ];
}

export function computeGolden(): GoldenRecord[] {
  const field = { className: 'Customer', propertyName: 'field' };
  return goldenSteps().flatMap(({ name, kind, transformer }) => {
    const bound = transformer.bind(field);
    return VALUES[kind]!.map((value) => ({ step: name, ...field, value, protected: bound.protect(value) }));
  });
}
