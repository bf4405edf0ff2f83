import type { Kind } from '../discover/index.ts';
import { gradedKind, LIKELY } from './evidence.ts';
import { contextOf, CTX_ADDRESS, CTX_BIRTH, CTX_NATIONAL_ID, CTX_ORGANISATION, CTX_PERSON_NAME, CTX_PHONE } from '../discover/index.ts';

/**
 * The unmapped guard's detectors: what a value at a path the mapping does not name is checked for
 * (the stream's records, the gateway's bodies). The validators are discover's own (detectors.ts);
 * this adds cheap prefilters, because every unmapped value of every record passes here, and
 * leaves out what only ever shows with a field's neighbours (a generic `name`) or is too common
 * outside personal data to refuse records for (IP addresses in operational fields).
 */
export const GUARD_KINDS = [
  'email',
  'payment-card',
  'iban',
  'phone',
  'us-ssn',
  'uk-nino',
  'fr-nir',
  'date-of-birth',
  'person-name',
  'postal-address',
] as const satisfies readonly Kind[];
export type GuardKind = (typeof GUARD_KINDS)[number];

export { contextOf } from '../discover/index.ts';

/**
 * How likely a value is personal data, as Google Sensitive Data Protection grades a finding:
 * the action threshold of a pipeline (`unmapped.threshold`) is one of the upper three.
 */
export const LIKELIHOODS = ['very-unlikely', 'unlikely', 'possible', 'likely', 'very-likely'] as const;
export type Likelihood = (typeof LIKELIHOODS)[number];
export const THRESHOLDS = ['possible', 'likely', 'very-likely'] as const satisfies readonly Likelihood[];
export type Threshold = (typeof THRESHOLDS)[number];
/** a likelihood as a number, 1 (very unlikely) to 5 (very likely) */
export function likelihoodLevel(l: Likelihood): number {
  return LIKELIHOODS.indexOf(l) + 1;
}
export { LIKELY } from './evidence.ts';
export const DEFAULT_THRESHOLD: Threshold = 'likely';

/** What a value is made of, counted in one pass over it (its text or its UTF-8 bytes: both count ASCII alike). */
export interface Shape {
  length: number;
  letters: number;
  digits: number;
  at: boolean;
  /** two letters then two digits: how an IBAN starts */
  ibanStart: boolean;
  /** starts with + or 00: an international phone number */
  international: boolean;
  /** spaces and commas: an address has one at least (two words) */
  separators: number;
}

/**
 * Whether a value of this shape, in a field of this context (contextOf), can be any guarded
 * kind: the gates unmappedValueKind runs its validators behind, so that a caller holding only
 * bytes skips decoding what no validator would accept (most values: words, codes, amounts, ids,
 * timestamps).
 */
export function mayBePersonal(shape: Shape, ctx: number): boolean {
  const { length, letters, digits } = shape;
  if (length < 5 || length > 254) return false;
  if (shape.at) return true;
  if (letters === 0 && ((digits >= 12 && digits <= 19) || (digits === 9 && (length === 11 || (ctx & CTX_NATIONAL_ID) !== 0)) || digits === 15)) return true;
  if (letters > 0 && ((shape.ibanStart && length >= 15) || (digits === 6 && letters === 3) || (digits === 13 && letters === 2))) return true;
  if (((ctx & CTX_PHONE) !== 0 || shape.international) && digits >= 6) return true;
  if ((ctx & CTX_BIRTH) !== 0 && digits >= 4) return true;
  if ((ctx & CTX_ADDRESS) !== 0 && digits > 0 && letters > 1 && shape.separators > 0) return true;
  return (ctx & CTX_PERSON_NAME) !== 0 && digits === 0 && length <= 80;
}

/**
 * mayBePersonal for a value known to hold no digit, no `@` and no escape, without its shape: only
 * a person's name in a field named so can be one (every other kind needs digits or an `@`).
 * `length` counts as shapeOfBytes does (UTF-8 bytes).
 */
export function mayBePersonalWithoutDigits(length: number, ctx: number): boolean {
  return (ctx & CTX_PERSON_NAME) !== 0 && length >= 5 && length <= 80;
}

const IBAN_START = /^[A-Za-z]{2}\d{2}/;

/** The shape of a value's text. */
export function shapeOf(text: string): Shape {
  let letters = 0;
  let digits = 0;
  let separators = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) digits++;
    else if ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a) letters++;
    else if (c === 0x20 || c === 0x2c) separators++;
  }
  return {
    length: text.length,
    letters,
    digits,
    at: text.includes('@'),
    ibanStart: IBAN_START.test(text),
    international: text.startsWith('+') || text.startsWith('00'),
    separators,
  };
}

/**
 * The kind of personal data `text` is, if any, at or above `threshold`, for a value in a field
 * named `name` ('' for none; `ctx` is contextOf(name), passed when known). `parent` gives the
 * context of the object holding the field (`card` for `card.number`), asked only when the
 * field's own name is neutral and a validator accepted the value. Each validator runs
 * only on values of its shape (mayBePersonal); evidence.ts grades what it finds.
 */
export function unmappedValueKind(text: string, name: string, ctx = contextOf(name), threshold = LIKELY, parent?: () => number): GuardKind | undefined {
  const shape = shapeOf(text);
  if (!mayBePersonal(shape, ctx)) return undefined;
  let found = gradedKind(text, shape, ctx);
  // a neutral name (`number`, `value`) is what its object says: `card.number`, `order.number`
  if (found !== undefined && ctx === 0 && parent !== undefined) {
    const p = parent();
    if (p !== 0) found = gradedKind(text, shape, p) ?? found;
  }
  // an address under a hotel, a supplier, a warehouse is a business's
  if (found?.kind === 'postal-address' && parent !== undefined && (parent() & CTX_ORGANISATION) !== 0) found = { ...found, level: found.level - 2 };
  return found !== undefined && found.level >= threshold ? found.kind : undefined;
}

/** The kind of personal data an object key is, if any: only what the key alone proves (no field name hints it). */
export function unmappedKeyKind(text: string, threshold = LIKELY): GuardKind | undefined {
  return unmappedValueKind(text, '', 0, threshold);
}

/**
 * unmappedKeyKind of a record key's UTF-8 bytes, decoded only when its shape can be a guarded
 * kind (most keys are ids): no string or shape object per record. A key longer than the gates'
 * 254 bytes is decoded and checked whole (its characters may be fewer).
 */
export function unmappedKeyKindOfBytes(b: Buffer, threshold = LIKELY): GuardKind | undefined {
  const shape = shapeOfBytes(b, 0, b.length);
  if (shape.length <= 254 && !mayBePersonal(shape, 0)) return undefined;
  return unmappedKeyKind(b.toString('utf8'), threshold);
}

// one shape, overwritten value after value (the guard is synchronous): no object per value
const scratch: Shape = { length: 0, letters: 0, digits: 0, at: false, ibanStart: false, international: false, separators: 0 };

/**
 * shapeOf over UTF-8 bytes, into the shared scratch shape: ASCII letters and digits count as in
 * the text (a multi-byte letter only lengthens it; the validators refuse it anyway).
 */
export function shapeOfBytes(b: Buffer, from: number, to: number): Shape {
  let letters = 0;
  let digits = 0;
  let separators = 0;
  let at = false;
  for (let k = from; k < to; k++) {
    const c = b[k]!;
    if (c >= 0x30 && c <= 0x39) digits++;
    else if ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a) letters++;
    else if (c === 0x20 || c === 0x2c) separators++;
    else if (c === 0x40 || c === 0x5c) at = true; // an escape may hide an @ (or a space): decode and look
  }
  const c0 = b[from];
  scratch.length = to - from;
  scratch.letters = letters;
  scratch.digits = digits;
  scratch.separators = at ? 1 : separators;
  scratch.at = at;
  scratch.ibanStart = to - from >= 4 && isLetter(c0) && isLetter(b[from + 1]) && isDigit(b[from + 2]) && isDigit(b[from + 3]);
  scratch.international = c0 === 0x2b || (c0 === 0x30 && b[from + 1] === 0x30);
  return scratch;
}

function isLetter(c: number | undefined): boolean {
  return c !== undefined && (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}
