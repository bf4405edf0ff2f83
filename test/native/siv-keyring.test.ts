import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTransformer, MemoryKeyProvider } from '../../src/engine/index.ts';
import { offsetsOf, sivKeyring } from '../../src/native/index.ts';
import { mulberry32 } from '../helpers/seeded-random.ts';

const hex = (s: string) => Buffer.from(s, 'hex');
/** values laid back to back, as a batch crosses into the core */
const batch = (values: readonly Uint8Array[]) => ({ bytes: Buffer.concat(values), offsets: offsetsOf(values.map((v) => v.length)) });

describe('the native core: AES-SIV keyring (issue 42)', () => {
  it('RFC 5297 A.1: the vector, its round trip, and a flipped bit refused', () => {
    const ring = sivKeyring();
    ring.add('k', hex('fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff'));
    const ad = [hex('101112131415161718191a1b1c1d1e1f2021222324252627')];
    const pt = hex('112233445566778899aabbccddee');
    const sealed = ring.sealMany('k', ad, pt, offsetsOf([pt.length]));
    expect(sealed.toString('hex')).toBe('85632d07c6e8f37f950acd320a2ecc9340c02b9690c4dc04daef7f6afe5c');
    const opened = ring.openMany('k', ad, sealed, offsetsOf([sealed.length]));
    expect(opened).toMatchObject({ failed: [] });
    expect(opened.plaintexts.equals(pt)).toBe(true);
    sealed[20]! ^= 1;
    expect(ring.openMany('k', ad, sealed, offsetsOf([sealed.length])).failed).toEqual([0]);
  });

  it("gives the aes-siv transformer's tokens byte for byte on 5,010 random values (keys of 64 bytes, fields, values of 0–200 bytes), and opens them", () => {
    const random = mulberry32(42);
    const int = (n: number) => Math.floor(random() * n);
    let compared = 0;
    for (let round = 0; round < 15; round++) {
      const key = randomBytes(64);
      const keys = new MemoryKeyProvider();
      keys.add('siv', 'aes-siv', new Uint8Array(key), 'now');
      const field = { className: `Class${int(100)}`, propertyName: `property${int(100)}` };
      const siv = createTransformer({ type: 'aes-siv', key: 'siv' }, () => ({ name: 'siv', id: 'siv', type: 'aes-siv' }), { keys, random: (b) => b }).bind(
        field,
      );
      const texts = Array.from({ length: 334 }, () => randomBytes(int(201)).toString('latin1'));
      const values = texts.map((t) => Buffer.from(t, 'utf8'));
      const tokens = texts.map((t) => Buffer.from(siv.protect(t) as string, 'base64url'));
      // the token: header (tag, key version) || V || C; the associated data: [header, Class.property]
      const header = tokens[0]!.subarray(0, 5);
      const ad = [header, Buffer.from(`${field.className}.${field.propertyName}`)];
      const ring = sivKeyring();
      ring.add('k', key);
      const { bytes, offsets } = batch(values);
      const sealed = ring.sealMany('k', ad, bytes, offsets);
      expect(sealed.equals(Buffer.concat(tokens.map((t) => t.subarray(5)))), `round ${round}`).toBe(true);
      const opened = ring.openMany('k', ad, sealed, offsetsOf(values.map((v) => v.length + 16)));
      expect(opened.failed).toEqual([]);
      expect(opened.plaintexts.equals(bytes)).toBe(true);
      compared += values.length;
    }
    expect(compared).toBe(5010);
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
