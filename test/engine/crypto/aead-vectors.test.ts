import { createCipheriv, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AesSiv } from '../../../src/engine/crypto/aes-siv.ts';
import { AesGcm } from '../../../src/engine/crypto/aes-gcm.ts';

const gcmSeal = (key: AesGcm, iv: Uint8Array, aad: Uint8Array, pt: Uint8Array) => key.seal(iv, aad, pt);
const gcmOpen = (key: AesGcm, iv: Uint8Array, aad: Uint8Array, sealed: Uint8Array) => key.open(iv, aad, sealed);
import { hmacSha256 } from '../../../src/engine/crypto/hmac-sha256.ts';

/** A Wycheproof verifier over veil's HMAC: the tag recomputed at its length (16..32 bytes) and compared in constant time. */
function hmacSha256Verify(key: KeyObject, parts: readonly Uint8Array[], tag: Uint8Array): boolean {
  if (tag.length < 16 || tag.length > 32) return false;
  return timingSafeEqual(hmacSha256(key, parts, tag.length), tag);
}
import { countTests, hex, toHex, vectors, type WycheproofFile } from './vectors.ts';

describe('AES-SIV: RFC 5297 appendix A', () => {
  const { vectors: list } = vectors<{ vectors: { name: string; keyHex: string; ad: string[]; plaintextHex: string; output: string }[] }>('rfc5297.json');
  it.each(list)('$name', (v) => {
    const siv = new AesSiv(hex(v.keyHex));
    const prefix = siv.prefix(v.ad.map(hex));
    expect(toHex(siv.seal(prefix, hex(v.plaintextHex)))).toBe(v.output);
    expect(toHex(siv.open(prefix, hex(v.output))!)).toBe(v.plaintextHex);
  });
});

describe('AES-SIV-CMAC: Wycheproof', () => {
  const file = vectors<WycheproofFile<{ keySize: number }>>('wycheproof/aes_siv_cmac_test.json');
  it('holds every test the file announces', () => expect(countTests(file)).toBe(file.numberOfTests));
  const tests = file.testGroups.flatMap((g) => g.tests.map((t) => ({ ...t, keySize: g.keySize })));
  it.each(tests)('tcId $tcId ($result, $keySize-bit key) $comment', (t) => {
    const siv = new AesSiv(hex(t.key));
    const prefix = siv.prefix([hex(t.aad as string)]);
    const opened = siv.open(prefix, hex(t.ct as string));
    if (t.result === 'valid') {
      expect(toHex(siv.seal(prefix, hex(t.msg)))).toBe(t.ct);
      expect(toHex(opened!)).toBe(t.msg);
    } else {
      expect(opened).toBeUndefined();
    }
  });
  it('refuses unsupported key sizes', () => {
    for (const n of [16, 24, 31, 65]) expect(() => new AesSiv(new Uint8Array(n))).toThrow(RangeError);
  });
});

describe('AES-GCM: McGrew–Viega test cases', () => {
  const { vectors: list } = vectors<{
    vectors: { testCase: number; keyHex: string; ivHex: string; aadHex: string; ptHex: string; ctHex: string; tagHex: string }[];
  }>('nist-gcm.json');
  it.each(list)('test case $testCase', (v) => {
    const key = new AesGcm(hex(v.keyHex));
    expect(toHex(gcmSeal(key, hex(v.ivHex), hex(v.aadHex), hex(v.ptHex)))).toBe(v.ctHex + v.tagHex);
    expect(toHex(gcmOpen(key, hex(v.ivHex), hex(v.aadHex), hex(v.ctHex + v.tagHex))!)).toBe(v.ptHex);
  });
});

describe('AES-GCM: Wycheproof', () => {
  const file = vectors<WycheproofFile<{ keySize: number; ivSize: number; tagSize: number }>>('wycheproof/aes_gcm_test.json');
  it('holds every test the file announces', () => expect(countTests(file)).toBe(file.numberOfTests));
  const tests = file.testGroups.flatMap((g) => g.tests.map((t) => ({ ...t, ivSize: g.ivSize, tagSize: g.tagSize, keySize: g.keySize })));
  const supported = (t: (typeof tests)[number]) => t.ivSize === 96 && t.tagSize === 128;
  it.each(tests.filter(supported))('tcId $tcId ($result) $comment', (t) => {
    const key = new AesGcm(hex(t.key));
    const opened = gcmOpen(key, hex(t.iv as string), hex(t.aad as string), hex((t.ct as string) + (t.tag as string)));
    if (t.result === 'valid') {
      expect(toHex(gcmSeal(key, hex(t.iv as string), hex(t.aad as string), hex(t.msg)))).toBe((t.ct as string) + (t.tag as string));
      expect(toHex(opened!)).toBe(t.msg);
    } else {
      expect(opened).toBeUndefined();
    }
  });
  it('refuses every vector with unsupported parameters (nonce other than 96 bits)', () => {
    const unsupported = tests.filter((t) => !supported(t));
    expect(unsupported.length).toBeGreaterThan(0);
    for (const t of unsupported) {
      const key = new AesGcm(hex(t.key));
      expect(() => gcmSeal(key, hex(t.iv as string), hex(t.aad as string), hex(t.msg)), `tcId ${t.tcId}`).toThrow(/96 bits/);
      expect(() => gcmOpen(key, hex(t.iv as string), hex(t.aad as string), hex((t.ct as string) + (t.tag as string))), `tcId ${t.tcId}`).toThrow(/96 bits/);
    }
  });
});

describe('HMAC-SHA256: Wycheproof', () => {
  const file = vectors<WycheproofFile<{ keySize: number; tagSize: number }>>('wycheproof/hmac_sha256_test.json');
  it('holds every test the file announces', () => expect(countTests(file)).toBe(file.numberOfTests));
  const tests = file.testGroups.flatMap((g) => g.tests.map((t) => ({ ...t, tagSize: g.tagSize })));
  const supported = (t: (typeof tests)[number]) => t.tagSize >= 128 && t.tagSize <= 256;
  it.each(tests.filter(supported))('tcId $tcId ($result, $tagSize-bit tag) $comment', (t) => {
    const key = createSecretKey(hex(t.key));
    const valid = hmacSha256Verify(key, [hex(t.msg)], hex(t.tag as string));
    if (t.result === 'valid') {
      expect(toHex(hmacSha256(key, [hex(t.msg)], t.tagSize / 8))).toBe(t.tag);
      expect(valid).toBe(true);
    } else {
      expect(valid).toBe(false);
    }
  });
  it('refuses tags shorter than 128 bits', () => {
    const key = createSecretKey(new Uint8Array(32));
    expect(() => hmacSha256(key, [], 8)).toThrow(RangeError);
    expect(hmacSha256Verify(key, [], new Uint8Array(8))).toBe(false);
  });
});

describe('AES-GCM: value for value against node:crypto (OpenSSL)', () => {
  it('seals and opens 3,000 random keys, nonces, AADs and messages (0–100 bytes) exactly as OpenSSL does; a flipped bit fails', () => {
    for (let i = 0; i < 3000; i++) {
      const keyBytes = randomBytes([16, 24, 32][i % 3]!);
      const nonce = randomBytes(12);
      const aad = randomBytes(i % 71);
      const pt = randomBytes(i % 101);
      const cipher = createCipheriv(`aes-${keyBytes.length * 8}-gcm` as 'aes-256-gcm', keyBytes, nonce, { authTagLength: 16 });
      cipher.setAAD(aad);
      const expected = Buffer.concat([cipher.update(pt), cipher.final(), cipher.getAuthTag()]);
      const ours = new AesGcm(keyBytes);
      const sealed = ours.seal(nonce, aad, pt);
      expect(Buffer.from(sealed).equals(expected), `case ${i}`).toBe(true);
      expect(Buffer.from(ours.open(nonce, aad, sealed)!).equals(pt)).toBe(true);
      const tampered = Uint8Array.from(sealed);
      tampered[i % tampered.length]! ^= 1 << (i % 8);
      expect(ours.open(nonce, aad, tampered)).toBeUndefined();
    }
  });
});

describe('AES-GCM: one seal from prepared associated data (prepareAad)', () => {
  it("equals OpenSSL value for value, opens, and refuses a tampered value or another key's prepared state", () => {
    for (let i = 0; i < 1000; i++) {
      const keyBytes = randomBytes([16, 24, 32][i % 3]!);
      const [nonce, aad, pt] = [randomBytes(12), randomBytes(i % 71), randomBytes(i % 101)];
      const cipher = createCipheriv(`aes-${keyBytes.length * 8}-gcm` as 'aes-256-gcm', keyBytes, nonce, { authTagLength: 16 });
      cipher.setAAD(aad);
      const expected = Buffer.concat([cipher.update(pt), cipher.final(), cipher.getAuthTag()]);
      const ours = new AesGcm(keyBytes);
      const prepared = ours.prepareAad(aad);
      const out = new Uint8Array(2 + pt.length + 16);
      out.set(pt, 2);
      const sealed = ours.sealInPlace(nonce, prepared, out, 2, pt.length).subarray(2);
      expect(Buffer.from(sealed).equals(expected), `case ${i}`).toBe(true);
      expect(Buffer.from(ours.open(nonce, prepared, sealed)!).equals(pt)).toBe(true);
      const tampered = Uint8Array.from(sealed);
      tampered[i % tampered.length]! ^= 1 << (i % 8);
      expect(ours.open(nonce, prepared, tampered)).toBeUndefined();
      // associated data of zero bytes only, or none, leaves GHASH's state zero under every key, so
      // another key's state is this one's (15 cases a run have 1 byte: one run in 17 draws a 0x00)
      const foreign = new AesGcm(randomBytes(keyBytes.length)).prepareAad(aad);
      if (aad.some((b) => b !== 0)) expect(ours.open(nonce, foreign, sealed), `case ${i}`).toBeUndefined();
      else expect(foreign.y).toEqual(prepared.y);
    }
    // that exception, drawn on purpose: zero bytes of associated data hash to the zero state under any key
    for (const zeros of [1, 16, 33]) for (let k = 0; k < 2; k++) expect(new AesGcm(randomBytes(32)).prepareAad(new Uint8Array(zeros)).y).toEqual([0, 0, 0, 0]);
  });
});

/** AesGcm.sealMany (counter blocks of a batch in one node:crypto call) as one seal each would give. */
function sealBatch(key: AesGcm, items: { nonce: Uint8Array; aad: Uint8Array; pt: Uint8Array }[]): Uint8Array[] {
  const outs = items.map((it) => {
    const out = new Uint8Array(3 + it.pt.length + 16);
    out.set(it.pt, 3);
    return out;
  });
  key.sealMany(items.map((it, i) => ({ nonce: it.nonce, aad: key.prepareAad(it.aad), out: outs[i]!, offset: 3, length: it.pt.length })));
  return outs.map((o) => o.subarray(3));
}

describe('AES-GCM: sealMany, a batch in one native call', () => {
  it('gives the McGrew–Viega ciphertexts and tags, all test cases of one key in one batch', () => {
    const { vectors: list } = vectors<{
      vectors: { testCase: number; keyHex: string; ivHex: string; aadHex: string; ptHex: string; ctHex: string; tagHex: string }[];
    }>('nist-gcm.json');
    for (const v of list.filter((x) => x.ivHex.length === 24)) {
      const key = new AesGcm(hex(v.keyHex));
      const [sealed] = sealBatch(key, [{ nonce: hex(v.ivHex), aad: hex(v.aadHex), pt: hex(v.ptHex) }]);
      expect(toHex(sealed!), `test case ${v.testCase}`).toBe(v.ctHex + v.tagHex);
    }
  });

  it('equals OpenSSL value for value over 300 batches of 0–40 values (0–300 bytes), and one of over 1 MiB', () => {
    for (let b = 0; b < 300; b++) {
      const keyBytes = randomBytes([16, 24, 32][b % 3]!);
      const key = new AesGcm(keyBytes);
      const items = Array.from({ length: b % 41 }, (_, i) => ({
        nonce: randomBytes(12),
        aad: randomBytes((b * 7 + i) % 40),
        pt: randomBytes((b * 13 + i * 29) % 301),
      }));
      if (b === 299) items.push({ nonce: randomBytes(12), aad: randomBytes(5), pt: randomBytes(2 ** 20 + 33) });
      const sealed = sealBatch(key, items);
      items.forEach((it, i) => {
        const cipher = createCipheriv(`aes-${keyBytes.length * 8}-gcm` as 'aes-256-gcm', keyBytes, it.nonce, { authTagLength: 16 });
        cipher.setAAD(it.aad);
        const expected = Buffer.concat([cipher.update(it.pt), cipher.final(), cipher.getAuthTag()]);
        expect(Buffer.from(sealed[i]!).equals(expected), `batch ${b} value ${i}`).toBe(true);
        expect(Buffer.from(key.open(it.nonce, it.aad, sealed[i]!)!).equals(it.pt)).toBe(true);
      });
    }
  });
});

/** AesSiv.sealMany (S2V's CMACs in lockstep and all CTR blocks, each step one native call). */
function sivBatch(siv: AesSiv, prefix: ReturnType<AesSiv['prefix']>, pts: Uint8Array[]): Uint8Array[] {
  const outs = pts.map((pt) => {
    const out = new Uint8Array(2 + 16 + pt.length);
    out.set(pt, 2 + 16);
    return out;
  });
  siv.sealMany(
    prefix,
    pts.map((pt, i) => ({ out: outs[i]!, offset: 2, length: pt.length })),
  );
  return outs.map((o) => o.subarray(2));
}

describe('AES-SIV: sealMany, a batch in native calls', () => {
  it('gives the RFC 5297 and every valid Wycheproof output, each vector of a key as a batch with others', () => {
    const { vectors: list } = vectors<{ vectors: { name: string; keyHex: string; ad: string[]; plaintextHex: string; output: string }[] }>('rfc5297.json');
    for (const v of list) {
      const siv = new AesSiv(hex(v.keyHex));
      const prefix = siv.prefix(v.ad.map(hex));
      const [out] = sivBatch(siv, prefix, [hex(v.plaintextHex), randomBytes(40), new Uint8Array(0)]);
      expect(toHex(out!), v.name).toBe(v.output);
    }
    const file = vectors<WycheproofFile<{ keySize: number }>>('wycheproof/aes_siv_cmac_test.json');
    const valid = file.testGroups.flatMap((g) => g.tests).filter((t) => t.result === 'valid');
    expect(valid.length).toBeGreaterThan(100);
    for (const t of valid) {
      const siv = new AesSiv(hex(t.key));
      const prefix = siv.prefix([hex(t.aad as string)]);
      const [out] = sivBatch(siv, prefix, [hex(t.msg), randomBytes(17), randomBytes(3)]);
      expect(toHex(out!), `tcId ${t.tcId}`).toBe(t.ct);
    }
  });

  it('equals seal() value for value over 300 batches of 0–40 values (0–200 bytes, every block boundary)', () => {
    for (let b = 0; b < 300; b++) {
      const siv = new AesSiv(randomBytes([32, 48, 64][b % 3]!));
      const prefix = siv.prefix([randomBytes(b % 30), randomBytes(5)]);
      const pts = Array.from({ length: b % 41 }, (_, i) => randomBytes((b * 11 + i * 17) % 201));
      const outs = sivBatch(siv, prefix, pts);
      pts.forEach((pt, i) => {
        expect(toHex(outs[i]!), `batch ${b} value ${i}`).toBe(toHex(siv.seal(prefix, pt)));
        expect(toHex(siv.open(prefix, outs[i]!)!)).toBe(toHex(pt));
      });
    }
  });
});
