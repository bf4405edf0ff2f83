// npm run bench:engine — values/s per transformer (one core, this process), each beside the ceiling
// of its bare primitive (the AES block calls / primitive call it needs) and a peer implementation,
// measured in the same run. Prints ratios; targets are checked and reported, not asserted.
import { createCipheriv, createHmac, randomBytes } from 'node:crypto';
import { FF1 } from '@noble/ciphers/ff1.js';
import { aessiv, unsafe } from '@noble/ciphers/aes.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { compileConfigText, createTransformer, Engine, MemoryKeyProvider, type KeyRef, type StepConfig } from '../src/engine/index.ts';
import { fmt, opsPerSecond, ratio } from './measure.ts';

const ms = Number(process.env.BENCH_MS ?? 1000);
const bytes = (n: number) => new Uint8Array(randomBytes(n));
const keys = new MemoryKeyProvider();
const material = { siv: bytes(64), gcm: bytes(32), ff1: bytes(32), ff3: bytes(32), mac: bytes(32) };
keys.add('siv', 'aes-siv', material.siv, 'now');
keys.add('gcm', 'aes-gcm', material.gcm, 'now');
keys.add('ff1', 'ff1', material.ff1, 'now');
keys.add('ff3', 'ff3-1', material.ff3, 'now');
keys.add('mac', 'hmac-sha256', material.mac, 'now');
const deps = { keys, random: (b: Uint8Array) => b.fill(7) };
const field = { className: 'Customer', propertyName: 'cardNumber' };

// inputs: 16-digit card numbers for FPE, 16-character strings otherwise; varied per call
const cards = Array.from({ length: 1024 }, (_, i) => `4${String(100000000000000 + i * 7919).padStart(15, '0')}`);
const texts = Array.from({ length: 1024 }, (_, i) => `user${String(i).padStart(4, '0')}@exmpl.io`.slice(0, 16));
const cardDigits = cards.map((c) => Array.from(c, Number));
const textBytes = texts.map((t) => new TextEncoder().encode(t));

/**
 * Ceiling: n AES block encryptions with a cached key schedule, the least a transformer can do —
 * noble's word-level round function called as veil's AesBlock.encryptWords calls it.
 */
function aesBlocks(n: number): () => void {
  const xk = unsafe.expandKeyLE(Uint8Array.from(material.ff1));
  const w = new Uint32Array(4);
  return () => {
    for (let k = 0; k < n; k++) {
      const r = unsafe.encrypt(xk, w[0]!, w[1]!, w[2]!, w[3]!);
      w[0] = r.s0;
      w[1] = r.s1;
      w[2] = r.s2;
      w[3] = r.s3;
    }
  };
}

interface Row {
  name: string;
  ours: number;
  ceiling?: [string, number];
  peer?: [string, number];
  target?: [number, string];
}
const rows: Row[] = [];
/** one configured step bound to the field, its key reference given as it is */
const bound = (config: StepConfig, key?: KeyRef) => createTransformer(config, () => key!, deps).bind(field);

const f1 = bound({ type: 'ff1', key: 'ff1', alphabet: 'digits', keepFirst: 0, keepLast: 0, luhn: false }, { name: 'ff1', id: 'ff1', type: 'ff1', version: 1 });
const tweak = bytes(8);
const nobleFf1 = FF1(10, material.ff1, tweak);
rows.push({
  name: 'ff1 (16 digits)',
  ours: opsPerSecond((i) => f1.protect(cards[i & 1023]!), 1, ms),
  ceiling: ['10 AES blocks', opsPerSecond(aesBlocks(10), 1, ms)],
  peer: ['@noble/ciphers ff1', opsPerSecond((i) => nobleFf1.encrypt(cardDigits[i & 1023]!), 1, ms / 2)],
  target: [200_000, '≥ 200,000/s and ≥ 10× noble'],
});

const f3 = bound({ type: 'ff3-1', key: 'ff3', alphabet: 'digits', keepFirst: 0, keepLast: 0 }, { name: 'ff3', id: 'ff3', type: 'ff3-1', version: 1 });
rows.push({
  name: 'ff3-1 (16 digits, deprecated)',
  ours: opsPerSecond((i) => f3.protect(cards[i & 1023]!), 1, ms),
  ceiling: ['8 AES blocks', opsPerSecond(aesBlocks(8), 1, ms)],
});

const siv = bound({ type: 'aes-siv', key: 'siv' }, { name: 'siv', id: 'siv', type: 'aes-siv' });
const sivLabel = new TextEncoder().encode('Customer.cardNumber');
const sivHeader = new Uint8Array([0xa1, 0, 0, 0, 1]);
rows.push({
  name: 'aes-siv (16 chars)',
  ours: opsPerSecond((i) => siv.protect(texts[i & 1023]!), 1, ms),
  ceiling: ['2 AES blocks', opsPerSecond(aesBlocks(2), 1, ms)],
  peer: ['@noble/ciphers aessiv', opsPerSecond((i) => aessiv(material.siv, sivHeader, sivLabel).encrypt(textBytes[i & 1023]!), 1, ms / 2)],
  target: [400_000, '≥ 400,000/s'],
});

const g = bound({ type: 'aes-gcm', key: 'gcm' }, { name: 'gcm', id: 'gcm', type: 'aes-gcm' });
const nonce = bytes(12);
rows.push({
  name: 'aes-gcm (16 chars)',
  ours: opsPerSecond((i) => g.protect(texts[i & 1023]!), 1, ms),
  // CTR block, tag mask and H-independent work: 2 AES blocks is the floor for a 16-byte value
  ceiling: ['2 AES blocks', opsPerSecond(aesBlocks(2), 1, ms)],
  // the previous implementation: one node:crypto Cipheriv per value (it takes no new nonce)
  peer: [
    'node:crypto GCM seal',
    opsPerSecond(
      (i) => {
        const c = createCipheriv('aes-256-gcm', material.gcm, nonce);
        c.update(textBytes[i & 1023]!);
        c.final();
        c.getAuthTag();
      },
      1,
      ms,
    ),
  ],
});

const h = bound({ type: 'hmac-sha256', key: 'mac', outputBytes: 32 }, { name: 'mac', id: 'mac', type: 'hmac-sha256' });
rows.push({
  name: 'hmac-sha256 (16 chars)',
  ours: opsPerSecond((i) => h.protect(texts[i & 1023]!), 1, ms),
  ceiling: [
    'node:crypto HMAC',
    opsPerSecond(
      (i) =>
        createHmac('sha256', material.mac)
          .update(textBytes[i & 1023]!)
          .digest(),
      1,
      ms,
    ),
  ],
  peer: ['@noble/hashes hmac', opsPerSecond((i) => hmac(sha256, material.mac, textBytes[i & 1023]!), 1, ms / 2)],
});

const m = bound({ type: 'mask', keepFirst: 0, keepLast: 4, char: '*', preserve: '-' });
rows.push({ name: 'mask (16 digits)', ours: opsPerSecond((i) => m.protect(cards[i & 1023]!), 1, ms) });
const r = bound({ type: 'redact', value: '[REDACTED]' });
rows.push({ name: 'redact', ours: opsPerSecond((i) => r.protect(cards[i & 1023]!), 1, ms) });

// the whole engine on 1,000-instance FF1 batches: plan + authorization + chains + response,
// on the same FF1 step as the bare transformer above, so the ratio is the engine's overhead
const compiled = compileConfigText(`
version: 1
keys: { pan: { type: ff1, version: 1 } }
sequences: { pan-ff1: { steps: [ { type: ff1, key: pan, alphabet: digits } ] } }
classes: { Customer: { properties: { cardNumber: { protect: pan-ff1 } } } }
rightsContexts: { ingest: { evidences: { Role: ingest }, grants: [ { actions: [Protect, Unprotect], fields: ['*'] } ] } }
processingContexts: { protect: { evidences: { Action: Protect } } }
`).config!;
const engineKeys = new MemoryKeyProvider();
engineKeys.add('pan', 'ff1', material.ff1, 'now');
const engine = new Engine({ config: compiled, keys: engineKeys });
const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const batch = {
  rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: 'ingest' }] }],
  processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: 'Protect' }] }],
  requests: [
    {
      guid: guid(3),
      rightsContext: guid(1),
      processingContext: guid(2),
      instances: cards.slice(0, 1000).map((value) => ({ className: 'Customer', propertyName: 'cardNumber', value })),
    },
  ],
};
const engineRate = opsPerSecond(() => engine.transform(batch, { roles: ['ingest'] }), 1000, ms);

console.log(`veil bench:engine — Node ${process.version}, one core, ${ms} ms per measurement\n`);
const pad = (s: string, n: number) => s.padEnd(n);
console.log(`${pad('transformer', 32)}${pad('values/s', 12)}${pad('bare primitive ceiling', 36)}${pad('peer', 36)}target`);
for (const row of rows) {
  const ceiling = row.ceiling ? `${row.ceiling[0]} ${fmt(row.ceiling[1])}/s (${ratio(row.ours, row.ceiling[1])})` : '—';
  const peer = row.peer ? `${row.peer[0]} ${fmt(row.peer[1])}/s (${ratio(row.ours, row.peer[1])})` : '—';
  const target = row.target ? `${row.target[1]}: ${row.ours >= row.target[0] ? 'met' : 'NOT met'}` : '';
  console.log(`${pad(row.name, 32)}${pad(fmt(row.ours), 12)}${pad(ceiling, 36)}${pad(peer, 36)}${target}`);
}
const ff1Row = rows[0]!;
console.log(
  `\nengine.transform, 1,000-instance batches of 16-digit FF1 values: ${fmt(engineRate)} values/s (${ratio(engineRate, ff1Row.ours)} of the bare ff1 transformer)`,
);
console.log(`ff1 vs @noble/ciphers ff1: ${ratio(ff1Row.ours, ff1Row.peer![1])} (target ≥ 10×)`);
