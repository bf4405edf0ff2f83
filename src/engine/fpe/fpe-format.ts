import { ValueError } from '../errors.ts';
import type { Alphabet } from './alphabet.ts';

/** A numeral cipher (FF1, FF3-1) over one alphabet's radix. */
export interface NumeralCipher {
  encrypt(x: ArrayLike<number>): number[];
  decrypt(x: ArrayLike<number>): number[];
  /** many at once (FF1: one native AES call per round); optional */
  encryptMany?(xs: readonly ArrayLike<number>[]): number[][];
  decryptMany?(xs: readonly ArrayLike<number>[]): number[][];
}

export interface FormatOptions {
  keepFirst: number;
  keepLast: number;
  luhn: boolean;
  minLength: number;
  maxLength: number;
}

/** The parts of a value: where its alphabet numerals are, and which they are. */
interface Parsed {
  value: string;
  /** UTF-16 index in `value` of every alphabet character */
  positions: number[];
  numerals: number[];
  /** every UTF-16 unit of `value` is below 256 (the output is built in one latin1 decode) */
  latin1: boolean;
}

// formatMany() builds latin1 outputs here (synchronously, so one buffer serves every call)
let scratch = Buffer.allocUnsafeSlow(256);

/**
 * Format handling shared by the FPE transformers: characters outside the alphabet keep their
 * place, the first/last N alphabet characters stay in clear, and with `luhn` the cipher is
 * cycle-walked until the whole number has the input's Luhn residue, so a valid card number
 * protects to a valid card number. Cycle walking keeps the map a bijection, hence reversible.
 */
export class FpeFormat {
  private readonly alphabet: Alphabet;
  private readonly options: FormatOptions;

  constructor(alphabet: Alphabet, options: FormatOptions) {
    this.alphabet = alphabet;
    this.options = options;
  }

  apply(value: string, cipher: NumeralCipher, forward: boolean): string {
    const parsed = this.parse(value);
    let mid = this.middleOf(parsed);
    const step = forward ? (x: number[]) => cipher.encrypt(x) : (x: number[]) => cipher.decrypt(x);
    mid = step(mid);
    if (this.options.luhn) {
      const residue = luhnResidue(parsed.numerals);
      // expected 10 rounds; bounded so a broken cipher cannot spin forever
      for (let round = 0; luhnResidueWith(parsed.numerals, this.options.keepFirst, mid) !== residue; round++) {
        if (round > 10_000) throw new Error('Luhn cycle walk did not converge');
        mid = step(mid);
      }
    }
    return this.formatMany([{ parsed, mid }])[0]!;
  }

  /**
   * apply() over many values: the cipher runs once per batch (and per Luhn walking step, over the
   * values still walking). Each value's output, or the ValueError apply() would throw for it.
   */
  applyMany(values: readonly string[], cipher: NumeralCipher, forward: boolean): (string | ValueError)[] {
    const out = new Array<string | ValueError>(values.length);
    const live: { at: number; parsed: Parsed; mid: number[]; residue: number }[] = [];
    values.forEach((value, at) => {
      try {
        const parsed = this.parse(value);
        live.push({ at, parsed, mid: this.middleOf(parsed), residue: this.options.luhn ? luhnResidue(parsed.numerals) : 0 });
      } catch (e) {
        if (!(e instanceof ValueError)) throw e;
        out[at] = e;
      }
    });
    const step = (xs: number[][]) =>
      forward ? (cipher.encryptMany?.(xs) ?? xs.map((x) => cipher.encrypt(x))) : (cipher.decryptMany?.(xs) ?? xs.map((x) => cipher.decrypt(x)));
    let walking = live;
    for (let round = 0; walking.length > 0; round++) {
      if (round > 10_000) throw new Error('Luhn cycle walk did not converge');
      const next = step(walking.map((v) => v.mid));
      walking.forEach((v, k) => (v.mid = next[k]!));
      walking = this.options.luhn ? walking.filter((v) => luhnResidueWith(v.parsed.numerals, this.options.keepFirst, v.mid) !== v.residue) : [];
    }
    const formatted = this.formatMany(live);
    live.forEach((v, k) => (out[v.at] = formatted[k]!));
    return out;
  }

  /**
   * Each value with its middle numerals replaced by its `mid`'s symbols, everything else in place.
   * Latin1 values over a latin1 alphabet are written into one buffer and decoded once (a decode per
   * value costs more than its cipher on the native core); the others are built from pieces.
   */
  private formatMany(items: readonly { parsed: Parsed; mid: readonly number[] }[]): string[] {
    const codes = this.alphabet.latin1Codes ?? new Uint8Array(0);
    const oneDecode = (parsed: Parsed) => this.alphabet.latin1Codes !== null && parsed.latin1;
    const total = items.reduce((n, v) => n + (oneDecode(v.parsed) ? v.parsed.value.length : 0), 0);
    if (scratch.length < total) scratch = Buffer.allocUnsafeSlow(total * 2);
    // a local: the stores in the loops below are typed-array stores, not a module binding's
    const buf = scratch;
    const keepFirst = this.options.keepFirst;
    let at = 0;
    for (const { parsed, mid } of items) {
      if (!oneDecode(parsed)) continue;
      const { value, positions } = parsed;
      for (let i = 0; i < value.length; i++) buf[at + i] = value.charCodeAt(i);
      for (let i = 0; i < mid.length; i++) buf[at + positions[keepFirst + i]!] = codes[mid[i]!]!;
      at += value.length;
    }
    const all = total > 0 ? buf.toString('latin1', 0, total) : '';
    // the scratch buffer outlives the call: it keeps no value
    buf.fill(0, 0, total);
    at = 0;
    return items.map((v) => (oneDecode(v.parsed) ? all.slice(at, (at += v.parsed.value.length)) : this.fromPieces(v.parsed, v.mid)));
  }

  /** The numerals the cipher takes (between the kept first and last ones); refuses lengths out of range. */
  private middleOf(parsed: Parsed): number[] {
    const { keepFirst, keepLast } = this.options;
    const total = parsed.numerals.length;
    const middle = total - keepFirst - keepLast;
    if (middle < this.options.minLength) {
      throw new ValueError(
        'VALUE_TOO_SHORT',
        `needs at least ${this.options.minLength + keepFirst + keepLast} alphabet characters (radix^length >= 1,000,000 after keeping ${keepFirst} first and ${keepLast} last), has ${total}`,
      );
    }
    if (middle > this.options.maxLength) {
      throw new ValueError('VALUE_TOO_LONG', `accepts at most ${this.options.maxLength + keepFirst + keepLast} alphabet characters, has ${total}`);
    }
    return parsed.numerals.slice(keepFirst, keepFirst + middle);
  }

  /** formatMany() of a value that is not all latin1 (or an alphabet that is not): its pieces joined. */
  private fromPieces(parsed: Parsed, mid: readonly number[]): string {
    const { value, positions } = parsed;
    const keepFirst = this.options.keepFirst;
    const symbols = this.alphabet.symbols;
    let out = '';
    let prev = 0;
    for (let i = 0; i < mid.length; i++) {
      const at = positions[keepFirst + i]!;
      out += value.slice(prev, at) + symbols[mid[i]!]!;
      prev = at + (value.codePointAt(at)! > 0xffff ? 2 : 1);
    }
    return out + value.slice(prev);
  }

  private parse(value: string): Parsed {
    const positions: number[] = [];
    const numerals: number[] = [];
    let latin1 = true;
    for (let i = 0; i < value.length; i++) {
      const at = i;
      let cp = value.charCodeAt(i);
      if (cp > 0xff) latin1 = false;
      if (cp >= 0xd800 && cp <= 0xdfff) {
        // a surrogate: the code point of its pair, or a lone one (codePointAt answers the unit itself)
        cp = value.codePointAt(i)!;
        if (cp <= 0xffff) throw new ValueError('VALUE_NOT_IN_ALPHABET', 'is not well-formed Unicode (lone surrogate)');
        i++;
      }
      const numeral = this.alphabet.indexOf(cp);
      if (numeral >= 0) {
        positions.push(at);
        numerals.push(numeral);
      }
    }
    return { value, positions, numerals, latin1 };
  }
}

/** Luhn sum mod 10 of a digit sequence (0 means valid). */
export function luhnResidue(digits: readonly number[]): number {
  return luhnResidueWith(digits, digits.length, []);
}

/** Luhn residue of `digits` with positions [from, from + mid.length) replaced by `mid`. */
function luhnResidueWith(digits: readonly number[], from: number, mid: readonly number[]): number {
  let sum = 0;
  const n = digits.length;
  for (let i = 0; i < n; i++) {
    let d = i >= from && i < from + mid.length ? mid[i - from]! : digits[i]!;
    if ((n - 1 - i) % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10;
}
