import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTransformer, MemoryKeyProvider } from '../../src/engine/index.ts';
import { offsetsOf, sivKeyring } from '../../src/native/index.ts';
import { mulberry32 } from '../helpers/seeded-random.ts';
import { countTests, vectors, type WycheproofFile } from '../engine/crypto/vectors.ts';

const hex = (s: string) => Buffer.from(s, 'hex');
/** values laid back to back, as a batch crosses into the core */
const batch = (values: readonly Uint8Array[]) => ({ bytes: Buffer.concat(values), offsets: offsetsOf(values.map((v) => v.length)) });

describe('the native core: AES-SIV keyring (issue 42)', () => {
  /** how many random values the differential compares: npm test's short form; `npm run test:native-differential` takes 1,000,000 */
  const DIFFERENTIAL_VALUES = Number(process.env.VEIL_NATIVE_DIFF_VALUES ?? 5010);

  it(`gives the aes-siv transformer's tokens byte for byte on ${DIFFERENTIAL_VALUES} random values (keys of 32, 48 and 64 bytes, one per subject in one keyring; fields; values of 0–200 characters), and opens them`, () => {
    const random = mulberry32(Number(process.env.VEIL_NATIVE_DIFF_SEED ?? 42));
    const int = (n: number) => Math.floor(random() * n);
    // one keyring holding a key per subject, as a subject-scoped pipeline's would: each batch asks it for its own
    const ring = sivKeyring();
    const tally = { values: 0, keys: 0, mismatches: 0, failedOpens: 0 };
    while (tally.values < DIFFERENTIAL_VALUES) {
      const key = randomBytes([32, 48, 64][int(3)]!);
      const subject = `subject-${tally.keys++}`;
      ring.add(subject, key);
      const keys = new MemoryKeyProvider();
      keys.add('siv', 'aes-siv', new Uint8Array(key), 'now');
      const field = { className: `Class${int(100)}`, propertyName: `property${int(100)}` };
      const siv = createTransformer({ type: 'aes-siv', key: 'siv' }, () => ({ name: 'siv', id: 'siv', type: 'aes-siv' }), { keys, random: (b) => b }).bind(
        field,
      );
      const count = Math.min(1 + int(400), DIFFERENTIAL_VALUES - tally.values);
      // latin1 text of random bytes: every UTF-8 length from 0 to 400 bytes, 1- and 2-byte characters
      const texts = Array.from({ length: count }, () => randomBytes(int(201)).toString('latin1'));
      const values = texts.map((t) => Buffer.from(t, 'utf8'));
      const tokens = texts.map((t) => Buffer.from(siv.protect(t) as string, 'base64url'));
      // the token: header (tag, key version) || V || C; the associated data: [header, Class.property]
      const ad = [tokens[0]!.subarray(0, 5), Buffer.from(`${field.className}.${field.propertyName}`)];
      const { bytes, offsets } = batch(values);
      const sealed = ring.sealMany(subject, ad, bytes, offsets);
      const sealedOffsets = offsetsOf(values.map((v) => v.length + 16));
      tokens.forEach((t, i) => {
        if (!t.subarray(5).equals(sealed.subarray(sealedOffsets[i], sealedOffsets[i + 1]))) tally.mismatches++;
      });
      const opened = ring.openMany(subject, ad, sealed, sealedOffsets);
      tally.failedOpens += opened.failed.length;
      if (!opened.plaintexts.equals(bytes)) tally.mismatches++;
      tally.values += count;
    }
    console.log(
      `native differential (aes-siv): ${tally.values} values, ${tally.keys} keys in one keyring, ${tally.mismatches} mismatches, ${tally.failedOpens} failed opens`,
    );
    expect({ values: tally.values, mismatches: tally.mismatches, failedOpens: tally.failedOpens }).toEqual({
      values: DIFFERENTIAL_VALUES,
      mismatches: 0,
      failedOpens: 0,
    });
    expect(ring.size).toBe(tally.keys);
  }, 600_000);

  it('RFC 5297 appendix A (A.1 and A.2, several associated-data components): seal and open', () => {
    const { vectors: list } = vectors<{ vectors: { name: string; keyHex: string; ad: string[]; plaintextHex: string; output: string }[] }>('rfc5297.json');
    expect(list.map((v) => v.name.slice(0, 3))).toEqual(['A.1', 'A.2']);
    for (const v of list) {
      const ring = sivKeyring();
      ring.add('k', hex(v.keyHex));
      const ad = v.ad.map(hex);
      const pt = hex(v.plaintextHex);
      expect(ring.sealMany('k', ad, pt, offsetsOf([pt.length])).toString('hex'), v.name).toBe(v.output);
      const opened = ring.openMany('k', ad, hex(v.output), offsetsOf([v.output.length / 2]));
      expect(opened.failed, v.name).toEqual([]);
      expect(opened.plaintexts.toString('hex'), v.name).toBe(v.plaintextHex);
    }
  });

  it('Wycheproof AES-SIV-CMAC (442 tests, 256-, 384- and 512-bit keys): every valid one seals to its ciphertext and opens, every invalid one is refused', () => {
    const file = vectors<WycheproofFile<{ keySize: number }>>('wycheproof/aes_siv_cmac_test.json');
    expect(countTests(file)).toBe(file.numberOfTests);
    const tally = { valid: 0, invalid: 0, wrong: [] as number[] };
    for (const t of file.testGroups.flatMap((g) => g.tests)) {
      const ring = sivKeyring();
      ring.add('k', hex(t.key));
      const ad = [hex(t.aad!)];
      const ct = hex(t.ct!);
      const opened = ring.openMany('k', ad, ct, offsetsOf([ct.length]));
      if (t.result === 'valid') {
        tally.valid++;
        const msg = hex(t.msg);
        const sealed = ring.sealMany('k', ad, msg, offsetsOf([msg.length]));
        if (sealed.toString('hex') !== t.ct || opened.failed.length !== 0 || opened.plaintexts.toString('hex') !== t.msg) tally.wrong.push(t.tcId);
      } else {
        tally.invalid++;
        if (opened.failed.length !== 1) tally.wrong.push(t.tcId);
      }
    }
    expect(tally.valid + tally.invalid).toBe(file.numberOfTests);
    expect(tally.wrong).toEqual([]);
  });

  it('seals and opens with keys of 32, 48 and 64 bytes (AES-128, -192, -256) and any number of associated-data components up to 126', () => {
    for (const length of [32, 48, 64]) {
      const ring = sivKeyring();
      ring.add('k', randomBytes(length));
      for (const count of [0, 1, 3, 126]) {
        const ad = Array.from({ length: count }, (_, i) => Buffer.from(`ad-${i}`));
        const values = [Buffer.from('ann@example.com'), Buffer.alloc(0), randomBytes(100)];
        const { bytes, offsets } = batch(values);
        const sealed = ring.sealMany('k', ad, bytes, offsets);
        expect(sealed.length).toBe(bytes.length + 16 * values.length);
        const opened = ring.openMany('k', ad, sealed, offsetsOf(values.map((v) => v.length + 16)));
        expect({ length, count, failed: opened.failed, same: opened.plaintexts.equals(bytes) }).toEqual({ length, count, failed: [], same: true });
      }
    }
  });

  it('a tampered value, a wrong key or other associated data fails that value only; the rest open', () => {
    const ring = sivKeyring();
    ring.add('a', randomBytes(64));
    ring.add('b', randomBytes(64));
    const values = ['ann@example.com', '', '4111111111111111'].map((s) => Buffer.from(s));
    const { bytes, offsets } = batch(values);
    const sealed = ring.sealMany('a', [Buffer.from('h')], bytes, offsets);
    const sealedOffsets = offsetsOf(values.map((v) => v.length + 16));
    const tampered = Buffer.from(sealed);
    tampered[sealedOffsets[2]! + 3]! ^= 0x80;
    expect(ring.openMany('a', [Buffer.from('h')], tampered, sealedOffsets).failed).toEqual([2]);
    expect(ring.openMany('b', [Buffer.from('h')], sealed, sealedOffsets).failed).toEqual([0, 1, 2]);
    expect(ring.openMany('a', [Buffer.from('H')], sealed, sealedOffsets).failed).toEqual([0, 1, 2]);
    const opened = ring.openMany('a', [Buffer.from('h')], tampered, sealedOffsets);
    expect(opened.plaintexts.subarray(opened.offsets[0], opened.offsets[1]).toString()).toBe('ann@example.com');
    expect(opened.offsets[3]! - opened.offsets[2]!).toBe(0);
    // shorter than V: not authentic
    expect(ring.openMany('a', [], Buffer.alloc(15), offsetsOf([15])).failed).toEqual([0]);
  });

  it('refuses bad calls loudly, naming no key material and no key id: a key of another length, an unknown key id, offsets out of line, more than 126 associated-data components', () => {
    const ring = sivKeyring();
    const key = randomBytes(32);
    expect(() => ring.add('k', randomBytes(33))).toThrow(/32, 48 or 64 bytes, not 33/);
    ring.add('k', key);
    expect(ring.size).toBe(1);
    const one = Buffer.from('x');
    expect(() => ring.sealMany('nope', [], one, offsetsOf([1]))).toThrow(/no AES-SIV key of that id/);
    expect(() => ring.sealMany('k', [], one, Uint32Array.of(0, 2))).toThrow(/offsets run from 0 to the buffer's length 1/);
    expect(() => ring.sealMany('k', [], Buffer.from('ab'), Uint32Array.of(0, 2, 1, 2))).toThrow(/offsets decrease at index 2/);
    expect(() => ring.sealMany('k', [], one, new Uint32Array(0))).toThrow(/at least one entry/);
    expect(() =>
      ring.sealMany(
        'k',
        Array.from({ length: 127 }, () => one),
        one,
        offsetsOf([1]),
      ),
    ).toThrow(/at most 126 associated-data components/);
    const said = (() => {
      try {
        ring.sealMany('ann@example.com', [], one, offsetsOf([1]));
      } catch (e) {
        return (e as Error).message;
      }
    })();
    expect(said).toMatch(/no AES-SIV key/);
    // neither key material nor the id, which may name a data subject
    expect(said).not.toContain(key.toString('hex'));
    expect(said).not.toContain('ann@example.com');
    expect(ring.remove('k')).toBe(true);
    expect(ring.remove('k')).toBe(false);
    expect(ring.size).toBe(0);
  });
});
