import { irreversible } from './output-format.ts';
import type { Transformer } from './transformer.ts';
import { ValueError } from '../errors.ts';

/**
 * Display masking: keeps the first/last N characters (code points) and the characters listed in
 * `preserve` (e.g. "-@."), replaces the rest with `char`. Irreversible. A value no longer than
 * keepFirst + keepLast is masked whole, so short values never come back in clear.
 */
export function mask(params: { keepFirst: number; keepLast: number; char: string; preserve: string }): Transformer {
  const preserve = new Set(Array.from(params.preserve));
  return {
    type: 'mask',
    reversible: false,
    bind() {
      return {
        protect(value) {
          if (!value.isWellFormed()) throw new ValueError('VALUE_NOT_IN_ALPHABET', 'is not well-formed Unicode (lone surrogate)');
          const chars = Array.from(value);
          const n = chars.length;
          const clear = n > params.keepFirst + params.keepLast;
          return chars.map((c, i) => (preserve.has(c) || (clear && (i < params.keepFirst || i >= n - params.keepLast)) ? c : params.char)).join('');
        },
        unprotect: () => irreversible('mask'),
      };
    },
  };
}
