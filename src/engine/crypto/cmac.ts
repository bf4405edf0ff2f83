import { AesBlock, Block } from './aes-block.ts';

/** The CBC state of a MAC in progress, shared by every key: a MAC runs to its end without yielding. */
const STATE = new Block();

/**
 * AES-CMAC (RFC 4493, NIST SP 800-38B). Keeps the cipher and both subkeys, so a MAC over a
 * message of n blocks costs n block encryptions and no allocation beyond the result.
 */
export class Cmac {
  private readonly aes: AesBlock;
  private readonly k1 = new Block();
  private readonly k2 = new Block();

  constructor(key: Uint8Array) {
    this.aes = new AesBlock(key);
    this.aes.encryptWords(this.k1.words); // L = AES(K, 0^128)
    this.k1.dbl();
    this.k2.set(this.k1).dbl();
  }

  /** Writes CMAC(message) into `out`. */
  macInto(message: Uint8Array, out: Block): Block {
    const s = STATE;
    s.words.fill(0);
    const n = message.length;
    const fullBlocks = n === 0 ? 0 : Math.ceil(n / 16) - 1;
    for (let i = 0; i < fullBlocks; i++) {
      for (let j = 0; j < 16; j++) s.bytes[j]! ^= message[i * 16 + j]!;
      this.aes.encryptWords(s.words);
    }
    this.lastBlock(message.subarray(fullBlocks * 16), s);
    return out.set(s);
  }

  /**
   * Writes CMAC(message xorend tail) into `out` — RFC 5297's xorend: the 16 bytes of `tail` XORed
   * into the message's last 16 (the message has at least 16) — reading the message in place: S2V's
   * last step for a value costs no copy of it.
   */
  macXorend(message: Uint8Array, tail: Uint8Array, out: Block): Block {
    const s = STATE;
    s.words.fill(0);
    const n = message.length;
    if (n < 16 || tail.length !== 16) throw new RangeError('xorend takes a message of at least 16 bytes and a 16-byte tail');
    const from = n - 16;
    const last = 16 * (Math.ceil(n / 16) - 1);
    for (let base = 0; base < last; base += 16) {
      for (let j = 0; j < 16; j++) {
        const p = base + j;
        s.bytes[j]! ^= p < from ? message[p]! : message[p]! ^ tail[p - from]!;
      }
      this.aes.encryptWords(s.words);
    }
    for (let p = last; p < n; p++) s.bytes[p - last]! ^= p < from ? message[p]! : message[p]! ^ tail[p - from]!;
    const complete = n - last === 16;
    if (!complete) s.bytes[n - last]! ^= 0x80;
    this.finishPadded(s, complete);
    return out.set(s);
  }

  /** CMAC over a one-block-or-less message whose last block is already formed in `s`. */
  finishPadded(s: Block, complete: boolean): void {
    s.xorWords(complete ? this.k1 : this.k2);
    this.aes.encryptWords(s.words);
  }

  private lastBlock(tail: Uint8Array, s: Block): void {
    const complete = tail.length === 16;
    for (let j = 0; j < tail.length; j++) s.bytes[j]! ^= tail[j]!;
    if (!complete) s.bytes[tail.length]! ^= 0x80;
    this.finishPadded(s, complete);
  }

  /** K1 (a complete last block) or K2 (a padded one), folded into a message's last block by batched CMACs. */
  subkey(complete: boolean): Block {
    return complete ? this.k1 : this.k2;
  }

  /** The raw block cipher under the same key, needed by S2V for its CTR-free parts. */
  get cipher(): AesBlock {
    return this.aes;
  }
}
