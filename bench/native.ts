// npm run bench:native — the native core (native/, issue 42) beside the JavaScript engine on the
// same values in the same run: the aes-siv transformer's tokens for a chunk of CHUNK e-mail
// addresses (18–24 bytes; AD = [header, binding] as the transformer passes it), ns per value on
// one thread: the engine one value at a time (protect), the engine a chunk at a time
// (protectMany, the stream chunk's path), and the native core a chunk in one call (sealMany, the
// values laid out, the tokens encoded and split included); and the native call alone. The
// tokens are checked equal before anything is timed. Then the same for FF1 over digits: a chunk of
// CHUNK 16-digit numbers through the ff1 transformer (protectMany) and through the native core
// (encryptMany, the numerals mapped in and out in JavaScript included). Then AES-GCM and
// HMAC-SHA256 on the e-mail chunk: the transformer against the native call alone. Last, the
// engine's own transformers on either set of primitives (deps.primitives: the JavaScript engine's
// or the native core's), a chunk each way: what handing the native core to the engine gives
// before any chunk-level work moves. Last, the JSON scan of a stream record: src/json-bytes' scanner
// beside the native core's (a chunk in one call). Prints ratios.
import { randomBytes } from 'node:crypto';
import { createTransformer, JS_PRIMITIVES, MemoryKeyProvider, type Primitives } from '../src/engine/index.ts';
import { fpeKeyring, gcmKeyring, hmacKeyring, nativeJsonScanner, nativePrimitives, offsetsOf, sivKeyring } from '../src/native/index.ts';
import { fmt, opsPerSecond, ratio } from './measure.ts';
import { compileExpectation } from '../src/json-bytes/paths.ts';
import { scanJson } from '../src/json-bytes/scan.ts';

const ms = Number(process.env.BENCH_MS ?? 1000);
const CHUNK = Number(process.env.BENCH_CHUNK ?? 1000);
const key = randomBytes(64);
const keys = new MemoryKeyProvider();
keys.add('siv', 'aes-siv', new Uint8Array(key), 'now');
const siv = createTransformer({ type: 'aes-siv', key: 'siv' }, () => ({ name: 'siv', id: 'siv', type: 'aes-siv' }), { keys, random: (b) => b }).bind({
  className: 'Customer',
  propertyName: 'email',
});
const texts = Array.from({ length: CHUNK }, (_, i) => `customer.${String(i * 7919).padStart(6, '0')}@example.com`.slice(0, 18 + (i % 7)));
const values = texts.map((t) => Buffer.from(t));

// the token's header (tag and key version) and the binding label: the transformer's associated data
const header = Buffer.from(siv.protect(texts[0]!) as string, 'base64url').subarray(0, 5);
const ad = [header, Buffer.from('Customer.email')];
const ring = sivKeyring();
ring.add('k', key);

/** the chunk's tokens from one native call: header || V || C, base64url, as the transformer writes them */
function nativeChunk(): string[] {
  const offsets = offsetsOf(values.map((v) => v.length));
  const sealed = ring.sealMany('k', ad, Buffer.concat(values), offsets);
  return values.map((_, i) => Buffer.concat([header, sealed.subarray(offsets[i]! + 16 * i, offsets[i + 1]! + 16 * (i + 1))]).toString('base64url'));
}

const expected = siv.protectMany!(texts);
const native = nativeChunk();
if (!expected.every((e, i) => e === native[i] && e === siv.protect(texts[i]!))) throw new Error('the native core and the JavaScript engine disagree');

const perValue = opsPerSecond((i) => siv.protect(texts[i % CHUNK]!), 1, ms);
const jsChunks = opsPerSecond(() => siv.protectMany!(texts), CHUNK, ms);
const nativeChunks = opsPerSecond(() => nativeChunk(), CHUNK, ms);
const laidOut = { bytes: Buffer.concat(values), offsets: offsetsOf(values.map((v) => v.length)) };
const nativeCall = opsPerSecond(() => ring.sealMany('k', ad, laidOut.bytes, laidOut.offsets), CHUNK, ms);
const ns = (perSecond: number) => (1e9 / perSecond).toFixed(0).padStart(7);
console.log(`aes-siv tokens, ${fmt(CHUNK)}-value chunks of 18–24-byte values, one thread     values/s  ns/value`);
console.log(`JavaScript engine, one value at a time (protect)                   ${fmt(perValue).padStart(12)}  ${ns(perValue)}`);
console.log(`JavaScript engine, a chunk (protectMany)                           ${fmt(jsChunks).padStart(12)}  ${ns(jsChunks)}`);
console.log(`native core, a chunk in one call (sealMany, tokens encoded)        ${fmt(nativeChunks).padStart(12)}  ${ns(nativeChunks)}`);
console.log(`native core, the call alone (the chunk laid out once, no tokens)   ${fmt(nativeCall).padStart(12)}  ${ns(nativeCall)}`);
console.log(`native / JavaScript chunk: ${ratio(nativeChunks, jsChunks)}; native / JavaScript one value at a time: ${ratio(nativeChunks, perValue)}`);

// FF1 over digits: 16-digit numbers, an 8-byte tweak, AES-256
const fpeKey = randomBytes(32);
const tweak = randomBytes(8);
keys.add('f', 'ff1', new Uint8Array(fpeKey), 'now');
const ff1Step = { type: 'ff1', key: 'f', alphabet: 'digits', tweakHex: tweak.toString('hex'), keepFirst: 0, keepLast: 0, luhn: false } as const;
const ff1 = createTransformer(ff1Step, () => ({ name: 'f', id: 'f', type: 'ff1', version: 1 }), { keys, random: (b) => b }).bind({
  className: 'Card',
  propertyName: 'number',
});
const digits = Array.from({ length: CHUNK }, (_, i) => String(4_000_000_000_000_000 + i * 7_919_000_003).slice(0, 16));
const fpe = fpeKeyring();
fpe.add('f', 'ff1', fpeKey);
const digitOffsets = offsetsOf(digits.map((d) => d.length));

/** the chunk through the core in one call, the digits mapped to numerals and back in JavaScript */
function nativeFf1(): string[] {
  const numerals = new Uint16Array(digitOffsets[CHUNK]!);
  digits.forEach((d, i) => {
    for (let j = 0; j < d.length; j++) numerals[digitOffsets[i]! + j] = d.charCodeAt(j) - 48;
  });
  const out = fpe.encryptMany('f', 10, tweak, numerals, digitOffsets);
  const text = Buffer.allocUnsafe(out.length);
  for (let j = 0; j < out.length; j++) text[j] = out[j]! + 48;
  return digits.map((_, i) => text.toString('latin1', digitOffsets[i], digitOffsets[i + 1]));
}

const ff1Expected = ff1.protectMany!(digits);
if (!nativeFf1().every((v, i) => v === ff1Expected[i] && v === ff1.protect(digits[i]!))) throw new Error('the native FF1 and the JavaScript engine disagree');
const ff1PerValue = opsPerSecond((i) => ff1.protect(digits[i % CHUNK]!), 1, ms);
const ff1Chunks = opsPerSecond(() => ff1.protectMany!(digits), CHUNK, ms);
const ff1Native = opsPerSecond(() => nativeFf1(), CHUNK, ms);
const laidDigits = Uint16Array.from(digits.join(''), (c) => c.charCodeAt(0) - 48);
const ff1Call = opsPerSecond(() => fpe.encryptMany('f', 10, tweak, laidDigits, digitOffsets), CHUNK, ms);
console.log(`\nff1 over digits, ${fmt(CHUNK)}-value chunks of 16-digit values, one thread           values/s  ns/value`);
console.log(`JavaScript engine, one value at a time (protect)                   ${fmt(ff1PerValue).padStart(12)}  ${ns(ff1PerValue)}`);
console.log(`JavaScript engine, a chunk (protectMany)                           ${fmt(ff1Chunks).padStart(12)}  ${ns(ff1Chunks)}`);
console.log(`native core, a chunk in one call (encryptMany, digits mapped)      ${fmt(ff1Native).padStart(12)}  ${ns(ff1Native)}`);
console.log(`native core, the call alone (numerals laid out once)               ${fmt(ff1Call).padStart(12)}  ${ns(ff1Call)}`);
console.log(`native / JavaScript chunk: ${ratio(ff1Native, ff1Chunks)}; native / JavaScript one value at a time: ${ratio(ff1Native, ff1PerValue)}`);

// AES-GCM and HMAC-SHA256 on the e-mail chunk: the transformer (a chunk for GCM, one value at a time for HMAC, which has no batch) against the native call alone
const gcmKey = randomBytes(32);
keys.add('g', 'aes-gcm', new Uint8Array(gcmKey), 'now');
keys.add('h', 'hmac-sha256', new Uint8Array(gcmKey), 'now');
const bindTo = (step: object, id: string, type: 'aes-gcm' | 'hmac-sha256') =>
  createTransformer({ type, key: id, ...step } as never, () => ({ name: id, id, type }), { keys, random: (b) => b.fill(7) }).bind({
    className: 'Customer',
    propertyName: 'email',
  });
const gcmJs = bindTo({}, 'g', 'aes-gcm');
const hmacJs = bindTo({ outputBytes: 16 }, 'h', 'hmac-sha256');
const gcmRing = gcmKeyring();
gcmRing.add('g', gcmKey);
const hmacRing = hmacKeyring();
hmacRing.add('h', gcmKey);
const gcmHeader = Buffer.from(gcmJs.protect(texts[0]!) as string, 'base64url').subarray(0, 5);
const hmacHeader = Buffer.from(hmacJs.protect(texts[0]!) as string, 'base64url').subarray(0, 5);
const label = Buffer.from('Customer.email');
const gcmAad = Buffer.concat([gcmHeader, label]);
const hmacPrefix = Buffer.concat([hmacHeader, Buffer.of(0, label.length), label]);
const nonces = Buffer.alloc(12 * CHUNK, 7);
const gcmSealed = gcmRing.sealMany('g', gcmAad, nonces, laidOut.bytes, laidOut.offsets);
const hmacTags = hmacRing.macMany('h', hmacPrefix, laidOut.bytes, laidOut.offsets, 16);
texts.forEach((t, i) => {
  const gcmToken = Buffer.from(gcmJs.protect(t) as string, 'base64url').subarray(5);
  const at = laidOut.offsets[i]! + 28 * i;
  if (!gcmToken.equals(gcmSealed.subarray(at, at + gcmToken.length))) throw new Error('the native AES-GCM and the JavaScript engine disagree');
  if (
    !Buffer.from(hmacJs.protect(t) as string, 'base64url')
      .subarray(5)
      .equals(hmacTags.subarray(16 * i, 16 * i + 16))
  ) {
    throw new Error('the native HMAC-SHA256 and the JavaScript engine disagree');
  }
});
const gcmChunks = opsPerSecond(() => gcmJs.protectMany!(texts), CHUNK, ms);
const gcmCall = opsPerSecond(() => gcmRing.sealMany('g', gcmAad, nonces, laidOut.bytes, laidOut.offsets), CHUNK, ms);
const hmacPerValue = opsPerSecond((i) => hmacJs.protect(texts[i % CHUNK]!), 1, ms);
const hmacCall = opsPerSecond(() => hmacRing.macMany('h', hmacPrefix, laidOut.bytes, laidOut.offsets, 16), CHUNK, ms);
console.log(`\naes-gcm and hmac-sha256 on the same chunk, one thread                   values/s  ns/value`);
console.log(`aes-gcm: JavaScript engine, a chunk (protectMany)                  ${fmt(gcmChunks).padStart(12)}  ${ns(gcmChunks)}`);
console.log(`aes-gcm: native core, the call alone                               ${fmt(gcmCall).padStart(12)}  ${ns(gcmCall)}`);
console.log(`hmac-sha256: JavaScript engine, one value at a time (protect)      ${fmt(hmacPerValue).padStart(12)}  ${ns(hmacPerValue)}`);
console.log(`hmac-sha256: native core, the call alone                           ${fmt(hmacCall).padStart(12)}  ${ns(hmacCall)}`);
console.log(`native call / JavaScript: aes-gcm ${ratio(gcmCall, gcmChunks)}; hmac-sha256 ${ratio(hmacCall, hmacPerValue)}`);

// the engine's transformers on the JavaScript primitives and on the native core's: protectMany and unprotectMany of the same chunks
const stepsOnBoth: [string, object, 'aes-siv' | 'aes-gcm' | 'hmac-sha256' | 'ff1', string, readonly string[]][] = [
  ['aes-siv', { type: 'aes-siv', key: 'siv' }, 'aes-siv', 'siv', texts],
  ['aes-gcm', { type: 'aes-gcm', key: 'g' }, 'aes-gcm', 'g', texts],
  ['hmac-sha256', { type: 'hmac-sha256', key: 'h', outputBytes: 16 }, 'hmac-sha256', 'h', texts],
  ['ff1 digits', ff1Step, 'ff1', 'f', digits],
];
const onPrimitives = (primitives: Primitives, step: object, type: string, id: string) =>
  createTransformer(step as never, () => ({ name: id, id, type, version: 1 }), { keys, random: (b) => b.fill(7), primitives }).bind({
    className: 'Customer',
    propertyName: 'email',
  });
console.log(`\nthe engine's transformers, ${fmt(CHUNK)}-value chunks: JavaScript primitives / native core      ns/value   ns/value   native/JS`);
for (const [name, step, type, id, chunk] of stepsOnBoth) {
  const [js, native] = [onPrimitives(JS_PRIMITIVES, step, type, id), onPrimitives(nativePrimitives(), step, type, id)];
  const outputs = js.protectMany!(chunk) as string[];
  if ((native.protectMany!(chunk) as string[]).some((o, i) => o !== outputs[i])) throw new Error(`${name}: the native core and the JavaScript engine disagree`);
  const rows: [string, (t: typeof js) => unknown][] = [['protectMany', (t) => t.protectMany!(chunk)]];
  if (type !== 'hmac-sha256') rows.push(['unprotectMany', (t) => t.unprotectMany!(outputs)]);
  for (const [what, run] of rows) {
    const [a, b] = [opsPerSecond(() => run(js), CHUNK, ms), opsPerSecond(() => run(native), CHUNK, ms)];
    console.log(`${`${name}: ${what}`.padEnd(72)} ${ns(a)}    ${ns(b)}    ${ratio(b, a)}`);
  }
}

// the JSON scan of a stream record (bench:stream's ~1 KB customer, 3 mapped paths): src/json-bytes'
// scanner record by record, beside the native core's scanner a chunk in one call (the chunk laid out included)
const records = Array.from({ length: CHUNK }, (_, i) =>
  Buffer.from(
    JSON.stringify({
      id: i,
      email: `customer${i}@example.com`,
      card: `4111${String(100000000000 + i).padStart(12, '0')}`,
      name: `Customer Number ${i}`,
      address: { street: `${i} Long Street`, city: 'Springfield', postcode: 'AB1 2CD', country: 'GB' },
      orders: Array.from({ length: 6 }, (_, j) => ({ sku: `SKU-${(i * 7 + j) % 1000}`, qty: (j % 3) + 1, price: 9.99 + j, note: 'standard delivery' })),
      padding: 'x'.repeat(180),
    }),
  ),
);
const tree = compileExpectation(['email', 'card', 'name'].map((name) => [{ kind: 'key' as const, name }]));
const scanner = nativeJsonScanner(tree);
const events: number[] = [];
const jsEvents = records.map((r) => events.slice(0, scanJson(r, tree, events)));
if (scanner.scanMany(records).some((e, i) => e === 'not JSON' || e.join() !== jsEvents[i]!.join())) throw new Error('the scanners disagree');
const jsScan = opsPerSecond((i) => scanJson(records[i % CHUNK]!, tree, events), 1, ms);
const nativeScan = opsPerSecond(() => scanner.scanMany(records), CHUNK, ms);
console.log(`\nJSON scan of a ${records[0]!.length}-byte record, 3 mapped paths, validating                      records/s  ns/record`);
console.log(`src/json-bytes scanJson, record by record                          ${fmt(jsScan).padStart(12)}  ${ns(jsScan)}`);
console.log(`native core, a chunk of ${fmt(CHUNK)} in one call (scanMany)              ${fmt(nativeScan).padStart(12)}  ${ns(nativeScan)}`);
console.log(`native / JavaScript: ${ratio(nativeScan, jsScan)}`);
