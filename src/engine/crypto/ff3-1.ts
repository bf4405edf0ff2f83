import { AesBlock, Block } from './aes-block.ts';
import { bigIntToNumerals, bytesToBigInt, bigIntToBytes, domainMinLength, numeralsToBigInt } from './numerals.ts';

/**
 * FF3-1 (NIST SP 800-38G Rev. 1): kept for compatibility with data protected elsewhere. NIST's
 * Rev. 1 second public draft withdraws it; new sequences should use FF1. 56-bit tweak.
 */
export class Ff31 {
  private readonly aes: AesBlock;
  private readonly radix: number;
  private readonly tl: Uint8Array;
  private readonly tr: Uint8Array;
  private readonly maxLength: number;

  constructor(key: Uint8Array, radix: number, tweak: Uint8Array) {
    if (!Number.isInteger(radix) || radix < 2 || radix > 65536) throw new RangeError('FF3-1 radix must be 2..65536');
    if (tweak.length !== 7) throw new RangeError('FF3-1 tweak must be 56 bits (7 bytes)');
    // CIPH_REVB(K): the spec reverses the key bytes before AES
    this.aes = new AesBlock(Uint8Array.from(key).reverse());
    this.radix = radix;
    this.tl = new Uint8Array([tweak[0]!, tweak[1]!, tweak[2]!, tweak[3]! & 0xf0]);
    this.tr = new Uint8Array([tweak[4]!, tweak[5]!, tweak[6]!, (tweak[3]! & 0x0f) << 4]);
    this.maxLength = Ff31.maxLength(radix);
  }

  static minLength(radix: number): number {
    return domainMinLength(radix);
  }

  /** maxlen = 2 * floor(log_radix(2^96)) */
  static maxLength(radix: number): number {
    return 2 * Math.floor(96 / Math.log2(radix) + 1e-9);
  }

  encrypt(x: ArrayLike<number>): number[] {
    return this.run(x, true);
  }

  decrypt(x: ArrayLike<number>): number[] {
    return this.run(x, false);
  }

  private run(x: ArrayLike<number>, forward: boolean): number[] {
    const n = x.length;
    if (n < 2 || this.radix ** n < 1_000_000) throw new RangeError('FF3-1 input shorter than the domain rule allows');
    if (n > this.maxLength) throw new RangeError('FF3-1 input longer than maxlen');
    const radix = BigInt(this.radix);
    const u = Math.ceil(n / 2);
    const v = n - u;
    const mu = radix ** BigInt(u);
    const mv = radix ** BigInt(v);
    const all = Array.from(x);
    // the spec works on REV(A), REV(B): hold the halves as reversed-numeral values
    let a = numeralsToBigInt(all.slice(0, u).reverse(), radix);
    let b = numeralsToBigInt(all.slice(u).reverse(), radix);
    if (forward) {
      for (let i = 0; i < 8; i++) {
        const even = (i & 1) === 0;
        const m = even ? mu : mv;
        const c = (a + this.prf(even ? this.tr : this.tl, i, b)) % m;
        a = b;
        b = c;
      }
    } else {
      for (let i = 7; i >= 0; i--) {
        const even = (i & 1) === 0;
        const m = even ? mu : mv;
        const c = (((b - this.prf(even ? this.tr : this.tl, i, a)) % m) + m) % m;
        b = a;
        a = c;
      }
    }
    return [...bigIntToNumerals(a, radix, u).reverse(), ...bigIntToNumerals(b, radix, v).reverse()];
  }

  /** y = NUM(REVB(CIPH_REVB(K)(REVB(P)))) with P = (W xor [i]^4) || [NUM_radix(REV(B))]^12 */
  private prf(w: Uint8Array, i: number, num: bigint): bigint {
    const p = new Uint8Array(16);
    p.set(w);
    p[3]! ^= i;
    p.set(bigIntToBytes(num, 12), 4);
    const blk = new Block();
    blk.bytes.set(p.reverse());
    this.aes.encryptWords(blk.words);
    return bytesToBigInt(blk.bytes.reverse());
  }
}
