const DIGITS = '0123456789';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const UPPER = LOWER.toUpperCase();

export const NAMED_ALPHABETS = {
  digits: DIGITS,
  lower: LOWER,
  upper: UPPER,
  'alnum-lower': DIGITS + LOWER,
  'alnum-upper': DIGITS + UPPER,
  alnum: DIGITS + UPPER + LOWER,
} as const;

export type AlphabetName = keyof typeof NAMED_ALPHABETS;
export const ALPHABET_NAMES = Object.keys(NAMED_ALPHABETS) as [AlphabetName, ...AlphabetName[]];

/**
 * The characters an FPE step encrypts, numeral i being the i-th code point. Lookups for ASCII go
 * through a table; other code points through a map, so custom alphabets may hold any Unicode.
 */
export class Alphabet {
  readonly symbols: readonly string[];
  readonly radix: number;
  /** each numeral's character code when every symbol is below 256 (FpeFormat's one-decode output), else null */
  readonly latin1Codes: Uint8Array | null;
  private readonly ascii = new Int32Array(128).fill(-1);
  private readonly other = new Map<number, number>();

  constructor(chars: string) {
    this.symbols = Array.from(chars);
    this.radix = this.symbols.length;
    const codes = this.symbols.map((symbol) => symbol.codePointAt(0)!);
    this.latin1Codes = codes.every((c) => c < 256) ? Uint8Array.from(codes) : null;
    this.symbols.forEach((symbol, i) => {
      const cp = symbol.codePointAt(0)!;
      if (cp < 128) this.ascii[cp] = i;
      else this.other.set(cp, i);
    });
  }

  static problem(chars: string): string | undefined {
    const symbols = Array.from(chars);
    if (symbols.length < 2) return 'needs at least 2 characters';
    if (symbols.length > 65536) return 'may hold at most 65536 characters';
    if (new Set(symbols).size !== symbols.length) return 'holds a character twice';
    if (!chars.isWellFormed()) return 'is not well-formed Unicode';
    return undefined;
  }

  /** numeral of a code point, or -1 outside the alphabet */
  indexOf(codePoint: number): number {
    return codePoint < 128 ? this.ascii[codePoint]! : (this.other.get(codePoint) ?? -1);
  }
}
