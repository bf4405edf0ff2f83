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

/** Whether a value with these traits can be any guarded kind: most values (words, codes, amounts) stop here. */
export function worthChecking(length: number, digits: number, at: boolean, hints: number): boolean {
  if (length < 5 || length > 254) return false;
  return at || digits >= 6 || (hints & (PERSON | BIRTH)) !== 0;
}

/**
 * The kind of personal data `text` is, if any, for a value in a field of these hints (fieldHints).
 * Name-dependent kinds (phone numbers without +, nine bare digits as an SSN, dates of birth,
 * person names) need the field's name to say so.
 */
export function unmappedValueKind(text: string, name: string): GuardKind | undefined {
  const hints = fieldHints(name);
  const context = { name: hints === 0 ? '' : normaliseName(name) };
  if (text.includes('@')) return isEmail(text) ? 'email' : undefined;
  if (isPaymentCard(text)) return 'payment-card';
  if (isIban(text)) return 'iban';
  if (isUsSsn(text, context)) return 'us-ssn';
  if (isUkNino(text)) return 'uk-nino';
  if (isFrNir(text)) return 'fr-nir';
  if ((hints & PHONE) !== 0 || text.startsWith('+') || text.startsWith('00')) {
    if (isPhone(text, context)) return 'phone';
  }
  if ((hints & BIRTH) !== 0 && isDateOfBirth(text, context)) return 'date-of-birth';
  if ((hints & PERSON) !== 0 && isPersonName(text, context)) return 'person-name';
  return undefined;
}

/** The kind of personal data an object key is, if any: only what the key alone proves (no field name hints it). */
export function unmappedKeyKind(text: string): GuardKind | undefined {
  return unmappedValueKind(text, '');
}
