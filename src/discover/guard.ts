import { isDateOfBirth, isEmail, isFrNir, isIban, isPaymentCard, isPersonName, isPhone, isUkNino, isUsSsn, normaliseName, type Kind } from './detectors.ts';

/**
 * The unmapped guard's detectors: what a value at a path the mapping does not name is checked for
 * (the stream's records, the gateway's bodies). The validators are discover's own (detectors.ts);
 * this adds cheap prefilters, because every unmapped value of every record passes here, and
 * leaves out what only ever shows with a field's neighbours (a generic `name`) or is too common
 * outside personal data to refuse records for (IP addresses in operational fields).
 */
export const GUARD_KINDS = ['email', 'payment-card', 'iban', 'phone', 'us-ssn', 'uk-nino', 'fr-nir', 'date-of-birth', 'person-name'] as const satisfies readonly Kind[];
export type GuardKind = (typeof GUARD_KINDS)[number];

/** What a field's name says, as bits: computed once per distinct name. */
const PHONE = 1;
const SSN = 2;
const BIRTH = 4;
const PERSON = 8;

const PHONE_NAMES = /(phone|mobile|tel|fax|msisdn|cell)/;
const SSN_NAMES = /(ssn|socialsecurity)/;
const BIRTH_NAMES = /(birth|dob|born|geburt|naissance|nacimiento)/;
const FIELD_HINTS_MAX = 4096;
const fieldHintCache = new Map<string, number>();

/** The hints of a field name as written (`mobilePhone`, `date_of_birth`); '' for none (array elements, the root, keys). */
export function fieldHints(name: string): number {
  if (name === '') return 0;
  let hints = fieldHintCache.get(name);
  if (hints !== undefined) return hints;
  const n = normaliseName(name);
  hints = (PHONE_NAMES.test(n) ? PHONE : 0) | (SSN_NAMES.test(n) ? SSN : 0) | (BIRTH_NAMES.test(n) ? BIRTH : 0) | (isPersonName('A', { name: n }) ? PERSON : 0);
  // a bounded cache: records with data as keys would otherwise grow it without end
  if (fieldHintCache.size >= FIELD_HINTS_MAX) fieldHintCache.clear();
  fieldHintCache.set(name, hints);
  return hints;
}

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
}

/**
 * Whether a value of this shape, in a field of these hints, can be any guarded kind: the gates
 * unmappedValueKind runs its validators behind, so that a caller holding only bytes skips
 * decoding what no validator would accept (most values: words, codes, amounts, ids, timestamps).
 */
export function mayBePersonal(shape: Shape, hints: number): boolean {
  const { length, letters, digits } = shape;
  if (length < 5 || length > 254) return false;
  if (shape.at) return true;
  if (letters === 0 && ((digits >= 12 && digits <= 19) || (digits === 9 && (length === 11 || (hints & SSN) !== 0)) || digits === 15)) return true;
  if (letters > 0 && ((shape.ibanStart && length >= 15) || (digits === 6 && letters === 3) || (digits === 13 && letters === 2))) return true;
  if (((hints & PHONE) !== 0 || shape.international) && digits >= 6) return true;
  if ((hints & BIRTH) !== 0 && digits >= 4) return true;
  return (hints & PERSON) !== 0 && digits === 0 && length <= 80;
}

/**
 * mayBePersonal for a value known to hold no digit, no `@` and no escape, without its shape: only
 * a person's name in a field named so can be one (every other kind needs digits or an `@`).
 * `length` counts as shapeOfBytes does (UTF-8 bytes).
 */
export function mayBePersonalWithoutDigits(length: number, hints: number): boolean {
  return (hints & PERSON) !== 0 && length >= 5 && length <= 80;
}

const IBAN_START = /^[A-Za-z]{2}\d{2}/;

/** The shape of a value's text. */
export function shapeOf(text: string): Shape {
  let letters = 0;
  let digits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) digits++;
    else if ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a) letters++;
  }
  return { length: text.length, letters, digits, at: text.includes('@'), ibanStart: IBAN_START.test(text), international: text.startsWith('+') || text.startsWith('00') };
}

/**
 * The kind of personal data `text` is, if any, for a value in a field named `name` ('' for
 * none; `hints` are fieldHints(name), passed when known). Name-dependent kinds (phone numbers
 * without +, nine bare digits as an SSN, dates of birth, person names) need the field's name to
 * say so. Each validator runs only on values of its shape (mayBePersonal).
 */
export function unmappedValueKind(text: string, name: string, hints = fieldHints(name)): GuardKind | undefined {
  const shape = shapeOf(text);
  if (!mayBePersonal(shape, hints)) return undefined;
  const context = { name: hints === 0 ? '' : normaliseName(name) };
  if (shape.at) return isEmail(text) ? 'email' : undefined;
  const { letters, digits } = shape;
  if (letters === 0) {
    if (digits >= 12 && digits <= 19 && isPaymentCard(text)) return 'payment-card';
    if (digits === 9 && isUsSsn(text, context)) return 'us-ssn';
    if (digits === 15 && isFrNir(text)) return 'fr-nir';
  } else {
    if (shape.ibanStart && isIban(text)) return 'iban';
    if (digits === 6 && letters === 3 && isUkNino(text)) return 'uk-nino';
    if (digits === 13 && letters === 2 && isFrNir(text)) return 'fr-nir';
  }
  if (((hints & PHONE) !== 0 || shape.international) && digits >= 6 && isPhone(text, context)) return 'phone';
  if ((hints & BIRTH) !== 0 && digits >= 4 && isDateOfBirth(text, context)) return 'date-of-birth';
  if ((hints & PERSON) !== 0 && digits === 0 && isPersonName(text, context)) return 'person-name';
  return undefined;
}

/** The kind of personal data an object key is, if any: only what the key alone proves (no field name hints it). */
export function unmappedKeyKind(text: string): GuardKind | undefined {
  return unmappedValueKind(text, '');
}

/**
 * unmappedKeyKind of a record key's UTF-8 bytes, decoded only when its shape can be a guarded
 * kind (most keys are ids): no string or shape object per record. A key longer than the gates'
 * 254 bytes is decoded and checked whole (its characters may be fewer).
 */
export function unmappedKeyKindOfBytes(b: Buffer): GuardKind | undefined {
  const shape = shapeOfBytes(b, 0, b.length);
  if (shape.length <= 254 && !mayBePersonal(shape, 0)) return undefined;
  return unmappedKeyKind(b.toString('utf8'));
}

// one shape, overwritten value after value (the guard is synchronous): no object per value
const scratch: Shape = { length: 0, letters: 0, digits: 0, at: false, ibanStart: false, international: false };

/**
 * shapeOf over UTF-8 bytes, into the shared scratch shape: ASCII letters and digits count as in
 * the text (a multi-byte letter only lengthens it; the validators refuse it anyway).
 */
export function shapeOfBytes(b: Buffer, from: number, to: number): Shape {
  let letters = 0;
  let digits = 0;
  let at = false;
  for (let k = from; k < to; k++) {
    const c = b[k]!;
    if (c >= 0x30 && c <= 0x39) digits++;
    else if ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a) letters++;
    else if (c === 0x40 || c === 0x5c) at = true; // an escape may hide an @: decode and look
  }
  const c0 = b[from];
  scratch.length = to - from;
  scratch.letters = letters;
  scratch.digits = digits;
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
