import { timingSafeEqual } from 'node:crypto';
import { AesBlock, AesEcb, Block } from './aes-block.ts';
import { Cmac } from './cmac.ts';

/**
 * Working blocks of a seal or open, shared by every key (each call runs to its end without
 * yielding): a key then holds only its schedules and subkeys — fewer bytes per key, for a process
 * holding a key per data subject.
 */
const scratch = { t: new Block(), keystream: new Block(), counter: new Block() };

/**
 * AES-SIV (RFC 5297): deterministic authenticated encryption. The key is K1 (S2V/CMAC) || K2
 * (CTR), each 16, 24 or 32 bytes. `prefix()` runs S2V over the associated-data components once;
 * a field's protect/unprotect then costs the CMAC and CTR blocks of the value only.
 */
export class AesSiv {
  private readonly mac: Cmac;
  private readonly ctr: AesBlock;
  /** the same two keys on node:crypto, for batches (sealMany) */
  private readonly macEcb: AesEcb;
  private readonly ctrEcb: AesEcb;

  constructor(key: Uint8Array) {
    if (key.length !== 32 && key.length !== 48 && key.length !== 64) {
      throw new RangeError(`AES-SIV key must be 32, 48 or 64 bytes, got ${key.length}`);
    }
    const half = key.length / 2;
    this.mac = new Cmac(key.subarray(0, half));
    this.ctr = new AesBlock(key.subarray(half));
    this.macEcb = new AesEcb(key.subarray(0, half));
    this.ctrEcb = new AesEcb(key.subarray(half));
  }

  /** S2V state D after the associated-data components (RFC 5297 §2.4, the loop over S1..Sn-1). */
  prefix(associatedData: readonly Uint8Array[]): SivPrefix {
    if (associatedData.length > 126) throw new RangeError('AES-SIV takes at most 126 associated-data components');
    const d = new Block();
    this.mac.macInto(new Uint8Array(16), d);
    const scratch = new Block();
    for (const ad of associatedData) {
      d.dbl().xorWords(this.mac.macInto(ad, scratch));
    }
    return { d };
  }

  /** Returns V || C. */
  seal(prefix: SivPrefix, plaintext: Uint8Array): Uint8Array {
    return this.sealInto(prefix, plaintext, new Uint8Array(16 + plaintext.length), 0);
  }

  /** Writes V || C into out[offset, offset + 16 + plaintext.length) and returns out. */
  sealInto<T extends Uint8Array>(prefix: SivPrefix, plaintext: Uint8Array, out: T, offset: number): T {
    out.set(plaintext, offset + 16);
    return this.sealInPlace(prefix, out, offset, plaintext.length);
  }

  /** The plaintext sits at out[offset + 16, +length); writes V before it and encrypts it in place. */
  sealInPlace<T extends Uint8Array>(prefix: SivPrefix, out: T, offset: number, length: number): T {
    const v = out.subarray(offset, offset + 16);
    const body = out.subarray(offset + 16, offset + 16 + length);
    this.s2vFinal(prefix, body, v);
    this.xorCtr(v, body, body);
    return out;
  }

  /**
   * sealInPlace for many values: the CMACs of S2V's last step run in lockstep (one node:crypto
   * call per block position), then the CTR blocks of all values in one call.
   */
  sealMany(prefix: SivPrefix, items: readonly SivSeal[]): void {
    const vs = this.cbcMacMany(items.map((it) => this.macInput(prefix, it.out.subarray(it.offset + 16, it.offset + 16 + it.length))));
    let blocks = 0;
    for (const it of items) blocks += Math.ceil(it.length / 16);
    const counters = new Uint8Array(16 * blocks);
    let at = 0;
    items.forEach((it, i) => {
      const v = vs.subarray(16 * i, 16 * i + 16);
      it.out.set(v, it.offset);
      const q = Uint8Array.from(v);
      q[8]! &= 0x7f;
      q[12]! &= 0x7f;
      for (let b = 0; b < it.length; b += 16, at += 16) {
        counters.set(q, at);
        for (let j = 15; j >= 0; j--) {
          q[j] = (q[j]! + 1) & 0xff;
          if (q[j] !== 0) break;
        }
      }
    });
    const ks = this.ctrEcb.encryptBlocks(counters);
    at = 0;
    for (const it of items) {
      const body = it.offset + 16;
      for (let b = 0; b < it.length; b++) it.out[body + b]! ^= ks[at + b]!;
      at += 16 * Math.ceil(it.length / 16);
    }
  }

  /** The CMAC input of S2V's last step (RFC 5297 §2.4) as whole blocks, the subkey folded into the last. */
  private macInput(prefix: SivPrefix, sn: Uint8Array): Uint8Array {
    const d = prefix.d.bytes;
    if (sn.length < 16) {
      // T = dbl(D) xor pad(Sn): one complete block
      const t = new Block().set(prefix.d).dbl();
      for (let i = 0; i < sn.length; i++) t.bytes[i]! ^= sn[i]!;
      t.bytes[sn.length]! ^= 0x80;
      return t.xorWords(this.mac.subkey(true)).bytes;
    }
    // T = Sn xorend D, then CMAC's padding and subkey on the last block
    const complete = sn.length % 16 === 0;
    const m = new Uint8Array(16 * Math.ceil(sn.length / 16));
    m.set(sn);
    for (let i = 0; i < 16; i++) m[sn.length - 16 + i]! ^= d[i]!;
    if (!complete) m[sn.length] = 0x80;
    const k = this.mac.subkey(complete).bytes;
    for (let i = 0; i < 16; i++) m[m.length - 16 + i]! ^= k[i]!;
    return m;
  }

  /** CBC-MAC (zero IV) of each input, all inputs' j-th blocks encrypted in one call; the MACs, 16 bytes each. */
  private cbcMacMany(inputs: readonly Uint8Array[]): Uint8Array {
    const state = new Uint8Array(16 * inputs.length);
    let longest = 0;
    for (const m of inputs) longest = Math.max(longest, m.length);
    for (let at = 0; at < longest; at += 16) {
      const active: number[] = [];
      inputs.forEach((m, i) => {
        if (m.length > at) active.push(i);
      });
      const blocks = new Uint8Array(16 * active.length);
      active.forEach((i, a) => {
        const m = inputs[i]!;
        for (let b = 0; b < 16; b++) blocks[16 * a + b] = state[16 * i + b]! ^ m[at + b]!;
      });
      const out = this.macEcb.encryptBlocks(blocks);
      active.forEach((i, a) => state.set(out.subarray(16 * a, 16 * a + 16), 16 * i));
    }
    return state;
  }

  /** open() of each V || C (one at a time: the JavaScript engine has no faster batch open). */
  openMany(prefix: SivPrefix, sealed: readonly Uint8Array[]): (Uint8Array | undefined)[] {
    return sealed.map((s) => this.open(prefix, s));
  }

  /** Returns the plaintext, or undefined when authentication fails. */
  open(prefix: SivPrefix, sealed: Uint8Array): Uint8Array | undefined {
    if (sealed.length < 16) return undefined;
    const v = sealed.subarray(0, 16);
    const plaintext = new Uint8Array(sealed.length - 16);
    this.xorCtr(v, sealed.subarray(16), plaintext);
    const expected = new Uint8Array(16);
    this.s2vFinal(prefix, plaintext, expected);
    return timingSafeEqual(expected, v) ? plaintext : undefined;
  }

  /** Final S2V step over the plaintext Sn, writing V into out[0..16). */
  private s2vFinal(prefix: SivPrefix, sn: Uint8Array, out: Uint8Array): void {
    const t = scratch.t;
    if (sn.length >= 16) {
      // T = Sn xorend D: CMAC over Sn with D folded into its last 16 bytes
      this.mac.macXorend(sn, prefix.d.bytes, t);
    } else {
      t.set(prefix.d).dbl();
      for (let i = 0; i < sn.length; i++) t.bytes[i]! ^= sn[i]!;
      t.bytes[sn.length]! ^= 0x80;
      this.mac.finishPadded(t, true);
    }
    out.set(t.bytes);
  }

  private xorCtr(v: Uint8Array, input: Uint8Array, output: Uint8Array): void {
    const q = scratch.counter;
    q.bytes.set(v);
    q.bytes[8]! &= 0x7f;
    q.bytes[12]! &= 0x7f;
    const ks = scratch.keystream;
    for (let off = 0; off < input.length; off += 16) {
      ks.set(q);
      this.ctr.encryptWords(ks.words);
      const n = Math.min(16, input.length - off);
      for (let i = 0; i < n; i++) output[off + i] = input[off + i]! ^ ks.bytes[i]!;
      for (let i = 15; i >= 0; i--) {
        q.bytes[i] = (q.bytes[i]! + 1) & 0xff;
        if (q.bytes[i] !== 0) break;
      }
    }
  }
}

export interface SivPrefix {
  readonly d: Block;
}

/** One seal of a batch: the plaintext at out[offset + 16, +length), V written before it. */
export interface SivSeal {
  out: Uint8Array;
  offset: number;
  length: number;
}
