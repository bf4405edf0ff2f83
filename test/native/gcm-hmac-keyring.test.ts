import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTransformer, MemoryKeyProvider, type KeyType } from '../../src/engine/index.ts';
import { gcmKeyring, hmacKeyring, offsetsOf } from '../../src/native/index.ts';
import { mulberry32 } from '../helpers/seeded-random.ts';
import { countTests, hex, toHex, vectors, type WycheproofFile } from '../engine/crypto/vectors.ts';

/** values laid back to back, as a batch crosses into the core */
const batch = (values: readonly Uint8Array[]) => ({ bytes: Buffer.concat(values), offsets: offsetsOf(values.map((v) => v.length)) });
const one = (value: Uint8Array) => [value, offsetsOf([value.length])] as const;

/** one step's transformer over one key, bound to a random field: what the native batch must reproduce */
function transformerOf(
  type: KeyType,
  key: Uint8Array,
  step: object,
  field: { className: string; propertyName: string },
  random: (b: Uint8Array) => Uint8Array,
) {
  const keys = new MemoryKeyProvider();
  keys.add('k', type, new Uint8Array(key), 'now');
  return createTransformer({ type, key: 'k', ...step } as never, () => ({ name: 'k', id: 'k', type }), { keys, random }).bind(field);
}

describe('the native core: AES-GCM and HMAC-SHA256 keyrings (issue 42)', () => {
  const DIFFERENTIAL_VALUES = Number(process.env.VEIL_NATIVE_DIFF_VALUES ?? 5010);

  it(`differential: gives the aes-gcm transformer's tokens byte for byte on ${DIFFERENTIAL_VALUES} random values under the same nonces (keys of 16, 24, 32 bytes, one per subject in one keyring), opens them, and refuses each one tampered`, () => {
    const random = mulberry32(Number(process.env.VEIL_NATIVE_DIFF_SEED ?? 42));
    const int = (n: number) => Math.floor(random() * n);
    const ring = gcmKeyring();
    const tally = { values: 0, keys: 0, mismatches: 0, failedOpens: 0, tamperedOpened: 0 };
    while (tally.values < DIFFERENTIAL_VALUES) {
      const key = randomBytes([16, 24, 32][int(3)]!);
      const subject = `subject-${tally.keys++}`;
      ring.add(subject, key);
      const count = Math.min(1 + int(400), DIFFERENTIAL_VALUES - tally.values);
      // the transformer draws its nonces from here, in order: the native batch is handed the same bytes
      const nonces = randomBytes(12 * count);
      let drawn = 0;
      const field = { className: `Class${int(100)}`, propertyName: `property${int(100)}` };
      const gcm = transformerOf('aes-gcm', key, {}, field, (b) => {
        b.set(nonces.subarray(drawn, (drawn += b.length)));
        return b;
      });
      const texts = Array.from({ length: count }, () => randomBytes(int(201)).toString('latin1'));
      const values = texts.map((t) => Buffer.from(t, 'utf8'));
      const tokens = texts.map((t) => Buffer.from(gcm.protect(t) as string, 'base64url'));
      // the associated data: the token's header (tag, key version) || Class.property
      const aad = Buffer.concat([tokens[0]!.subarray(0, 5), Buffer.from(`${field.className}.${field.propertyName}`)]);
      const { bytes, offsets } = batch(values);
      const sealed = ring.sealMany(subject, aad, nonces, bytes, offsets);
      const sealedOffsets = offsetsOf(values.map((v) => v.length + 28));
      tokens.forEach((t, i) => {
        if (!t.subarray(5).equals(sealed.subarray(sealedOffsets[i], sealedOffsets[i + 1]))) tally.mismatches++;
      });
      const opened = ring.openMany(subject, aad, sealed, sealedOffsets);
      tally.failedOpens += opened.failed.length;
      if (!opened.plaintexts.equals(bytes)) tally.mismatches++;
      // one flipped bit anywhere in each sealed value: every one refused, the rest of the batch unharmed
      const tampered = Buffer.from(sealed);
      values.forEach((_, i) => (tampered[sealedOffsets[i]! + int(sealedOffsets[i + 1]! - sealedOffsets[i]!)]! ^= 1 << int(8)));
      tally.tamperedOpened += count - ring.openMany(subject, aad, tampered, sealedOffsets).failed.length;
      tally.values += count;
    }
    console.log(
      `native differential (aes-gcm): ${tally.values} values, ${tally.keys} keys in one keyring, ${tally.mismatches} mismatches, ${tally.failedOpens} failed opens, ${tally.tamperedOpened} tampered values opened`,
    );
    expect({ ...tally, keys: 0 }).toEqual({ values: DIFFERENTIAL_VALUES, keys: 0, mismatches: 0, failedOpens: 0, tamperedOpened: 0 });
  }, 600_000);

  it(`differential: gives the hmac-sha256 transformer's pseudonyms byte for byte on ${DIFFERENTIAL_VALUES} random values (keys of 16, 24, 32, 48 and 64 bytes, the sizes veil's keystore makes; tags of 16 to 32 bytes)`, () => {
    const random = mulberry32(Number(process.env.VEIL_NATIVE_DIFF_SEED ?? 42) + 1);
    const int = (n: number) => Math.floor(random() * n);
    const ring = hmacKeyring();
    const tally = { values: 0, keys: 0, mismatches: 0 };
    while (tally.values < DIFFERENTIAL_VALUES) {
      const key = randomBytes([16, 24, 32, 48, 64][int(5)]!);
      const subject = `subject-${tally.keys++}`;
      ring.add(subject, key);
      const outputBytes = 16 + int(17);
      const field = { className: `Class${int(100)}`, propertyName: `property${int(100)}` };
      const hmac = transformerOf('hmac-sha256', key, { outputBytes }, field, (b) => b);
      const count = Math.min(1 + int(400), DIFFERENTIAL_VALUES - tally.values);
      const texts = Array.from({ length: count }, () => randomBytes(int(201)).toString('latin1'));
      const tokens = texts.map((t) => Buffer.from(hmac.protect(t) as string, 'base64url'));
      // the prefix: header || len(label) as u16 || label
      const label = Buffer.from(`${field.className}.${field.propertyName}`);
      const prefix = Buffer.concat([tokens[0]!.subarray(0, 5), Buffer.of(label.length >> 8, label.length & 0xff), label]);
      const { bytes, offsets } = batch(texts.map((t) => Buffer.from(t, 'utf8')));
      const tags = ring.macMany(subject, prefix, bytes, offsets, outputBytes);
      tokens.forEach((t, i) => {
        if (!t.subarray(5).equals(tags.subarray(outputBytes * i, outputBytes * (i + 1)))) tally.mismatches++;
      });
      tally.values += count;
    }
    console.log(`native differential (hmac-sha256): ${tally.values} values, ${tally.keys} keys in one keyring, ${tally.mismatches} mismatches`);
    expect({ values: tally.values, mismatches: tally.mismatches }).toEqual({ values: DIFFERENTIAL_VALUES, mismatches: 0 });
  }, 600_000);

  it('AES-GCM: the McGrew–Viega vectors, and every Wycheproof test with a 96-bit nonce and 128-bit tag (valid ones seal and open, invalid ones are refused)', () => {
    const { vectors: nist } = vectors<{
      vectors: { testCase: number; keyHex: string; ivHex: string; aadHex: string; ptHex: string; ctHex: string; tagHex: string }[];
    }>('nist-gcm.json');
    const file = vectors<WycheproofFile<{ ivSize: number; tagSize: number }>>('wycheproof/aes_gcm_test.json');
    expect(countTests(file)).toBe(file.numberOfTests);
    const cases = [
      ...nist.map((v) => ({ id: `case ${v.testCase}`, key: v.keyHex, iv: v.ivHex, aad: v.aadHex, msg: v.ptHex, sealed: v.ctHex + v.tagHex, valid: true })),
      ...file.testGroups
        .filter((g) => g.ivSize === 96 && g.tagSize === 128)
        .flatMap((g) => g.tests)
        .map((t) => ({ id: `tcId ${t.tcId}`, key: t.key, iv: t.iv!, aad: t.aad!, msg: t.msg, sealed: t.ct! + t.tag!, valid: t.result === 'valid' })),
    ];
    const tally = { valid: 0, invalid: 0, wrong: [] as string[] };
    for (const c of cases) {
      const ring = gcmKeyring();
      ring.add('k', hex(c.key));
      const opened = ring.openMany('k', hex(c.aad), ...one(hex(c.iv + c.sealed)));
      if (c.valid) {
        const sealed = ring.sealMany('k', hex(c.aad), hex(c.iv), ...one(hex(c.msg)));
        if (toHex(sealed) !== c.iv + c.sealed || opened.failed.length || toHex(opened.plaintexts) !== c.msg) tally.wrong.push(c.id);
        tally.valid++;
      } else {
        if (opened.failed.length !== 1) tally.wrong.push(c.id);
        tally.invalid++;
      }
    }
    expect(tally.wrong).toEqual([]);
    expect(tally.valid + tally.invalid).toBe(cases.length);
    expect(tally.invalid).toBeGreaterThan(0);
  });

  it('HMAC-SHA256: every Wycheproof test with a 128- to 256-bit tag (valid ones give the tag, invalid ones do not)', () => {
    const file = vectors<WycheproofFile<{ tagSize: number }>>('wycheproof/hmac_sha256_test.json');
    expect(countTests(file)).toBe(file.numberOfTests);
    const wrong: number[] = [];
    for (const g of file.testGroups.filter((g) => g.tagSize >= 128 && g.tagSize <= 256)) {
      for (const t of g.tests) {
        const ring = hmacKeyring();
        ring.add('k', hex(t.key));
        const tag = toHex(ring.macMany('k', new Uint8Array(), ...one(hex(t.msg)), g.tagSize / 8));
        if ((tag === t.tag) !== (t.result === 'valid')) wrong.push(t.tcId);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('refuses what it cannot do, never echoing the key id or the key', () => {
    const gcm = gcmKeyring();
    const hmac = hmacKeyring();
    const key = randomBytes(32);
    gcm.add('alice@example.com', key);
    hmac.add('alice@example.com', key);
    const refusals: [string, () => unknown, RegExp][] = [
      ['a GCM key of 20 bytes', () => gcm.add('k', new Uint8Array(20)), /16, 24 or 32 bytes, not 20/],
      [
        'nonces short of one per value',
        () => gcm.sealMany('alice@example.com', new Uint8Array(), new Uint8Array(11), ...one(Buffer.from('x'))),
        /1 values take 12 nonce bytes, not 11/,
      ],
      [
        'an unknown GCM key id',
        () => gcm.sealMany('bob@example.com', new Uint8Array(), new Uint8Array(12), ...one(Buffer.from('x'))),
        /no AES-GCM key of that id/,
      ],
      ['an empty HMAC key', () => hmac.add('k', new Uint8Array()), /at least 1 byte/],
      ['a 15-byte HMAC tag', () => hmac.macMany('alice@example.com', new Uint8Array(), ...one(Buffer.from('x')), 15), /16 to 32 bytes, not 15/],
      ['a 33-byte HMAC tag', () => hmac.macMany('alice@example.com', new Uint8Array(), ...one(Buffer.from('x')), 33), /not 33/],
      ['an unknown HMAC key id', () => hmac.macMany('bob@example.com', new Uint8Array(), ...one(Buffer.from('x')), 16), /no HMAC-SHA256 key of that id/],
      ['offsets past the values', () => hmac.macMany('alice@example.com', new Uint8Array(), Buffer.from('x'), Uint32Array.of(0, 2), 16), /offsets run from 0/],
    ];
    for (const [what, call, message] of refusals) {
      expect(call, what).toThrow(message);
      try {
        call();
      } catch (e) {
        expect((e as Error).message, what).not.toMatch(/example\.com/);
        expect((e as Error).message, what).not.toContain(key.toString('hex'));
      }
    }
    // a sealed value shorter than nonce || tag is refused, not read past
    expect(gcm.openMany('alice@example.com', new Uint8Array(), ...one(new Uint8Array(27))).failed).toEqual([0]);
    expect([gcm.size, hmac.size, gcm.remove('alice@example.com'), gcm.size]).toEqual([1, 1, true, 0]);
  });
});
