import { createTransformer, type KeyRef, type Primitives, type StepConfig, type Transformer } from '../../src/engine/index.ts';
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

/** Every output format: each keyed step under key version 1 and, for AEAD/HMAC, a rotated version 2; on the JavaScript engine's primitives unless others are given (the native core's: test/native). */
export function goldenSteps(primitives?: Primitives): { name: string; kind: keyof typeof VALUES; transformer: Transformer }[] {
  const keys = keysWith([
    ['siv', 'aes-siv', 64, 0x10],
    ['gcm', 'aes-gcm', 32, 0x20],
    ['fpe', 'ff1', 32, 0x30],
    ['ff3', 'ff3-1', 32, 0x40],
    ['mac', 'hmac-sha256', 32, 0x50],
  ]);
  for (const [id, type, size, seed] of [
    ['siv', 'aes-siv', 64, 0x11],
    ['gcm', 'aes-gcm', 32, 0x21],
    ['mac', 'hmac-sha256', 32, 0x51],
  ] as const) {
    keys.add(
      id,
      type,
      Uint8Array.from({ length: size }, (_, i) => (seed * 7 + i) & 0xff),
      '2026-02-01T00:00:00.000Z',
    );
  }
  let counter = 0;
  const d = { ...deps(keys, (b) => b.fill(++counter & 0xff)), primitives };
  // one configured step, its key reference given as it is (pinned version or primary)
  const step = (config: StepConfig, key?: KeyRef): Transformer => createTransformer(config, () => key!, d);
  const fpe = { keepFirst: 0, keepLast: 0 };
  return [
    { name: 'aes-siv v1', kind: 'text', transformer: step({ type: 'aes-siv', key: 'siv' }, ref('siv', 'aes-siv', 1)) },
    { name: 'aes-siv v2', kind: 'text', transformer: step({ type: 'aes-siv', key: 'siv' }, ref('siv', 'aes-siv')) },
    { name: 'aes-siv shared binding', kind: 'text', transformer: step({ type: 'aes-siv', key: 'siv', binding: 'email-join' }, ref('siv', 'aes-siv', 1)) },
    { name: 'aes-gcm v1', kind: 'text', transformer: step({ type: 'aes-gcm', key: 'gcm' }, ref('gcm', 'aes-gcm', 1)) },
    { name: 'aes-gcm v2', kind: 'text', transformer: step({ type: 'aes-gcm', key: 'gcm' }, ref('gcm', 'aes-gcm')) },
    { name: 'hmac-sha256 v1', kind: 'text', transformer: step({ type: 'hmac-sha256', key: 'mac', outputBytes: 32 }, ref('mac', 'hmac-sha256', 1)) },
    { name: 'hmac-sha256 v2 16 bytes', kind: 'text', transformer: step({ type: 'hmac-sha256', key: 'mac', outputBytes: 16 }, ref('mac', 'hmac-sha256')) },
    { name: 'ff1 digits', kind: 'card', transformer: step({ type: 'ff1', ...fpe, luhn: false, alphabet: 'digits', key: 'fpe' }, ref('fpe', 'ff1', 1)) },
    {
      name: 'ff1 digits bin+last4',
      kind: 'card',
      transformer: step({ type: 'ff1', keepFirst: 6, keepLast: 4, luhn: false, alphabet: 'digits', key: 'fpe' }, ref('fpe', 'ff1', 1)),
    },
    {
      name: 'ff1 digits luhn',
      kind: 'card',
      transformer: step({ type: 'ff1', keepFirst: 0, keepLast: 4, luhn: true, alphabet: 'digits', key: 'fpe' }, ref('fpe', 'ff1', 1)),
    },
    {
      name: 'ff1 alnum-upper explicit tweak',
      kind: 'id',
      transformer: step({ type: 'ff1', ...fpe, luhn: false, alphabet: 'alnum-upper', tweakHex: '0011223344556677', key: 'fpe' }, ref('fpe', 'ff1', 1)),
    },
    { name: 'ff3-1 digits', kind: 'card', transformer: step({ type: 'ff3-1', ...fpe, alphabet: 'digits', key: 'ff3' }, ref('ff3', 'ff3-1', 1)) },
    { name: 'ff3-1 alnum-upper', kind: 'id', transformer: step({ type: 'ff3-1', ...fpe, alphabet: 'alnum-upper', key: 'ff3' }, ref('ff3', 'ff3-1', 1)) },
    { name: 'mask last 4', kind: 'card', transformer: step({ type: 'mask', keepFirst: 0, keepLast: 4, char: '*', preserve: '-' }) },
    { name: 'redact', kind: 'text', transformer: step({ type: 'redact', value: '[REDACTED]' }) },
  ];
}

export function computeGolden(primitives?: Primitives): GoldenRecord[] {
  const field = { className: 'Customer', propertyName: 'field' };
  return goldenSteps(primitives).flatMap(({ name, kind, transformer }) => {
    const bound = transformer.bind(field);
    return VALUES[kind]!.map((value) => ({ step: name, ...field, value, protected: bound.protect(value) }));
  });
}
