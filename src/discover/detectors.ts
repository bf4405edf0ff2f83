import { isIP } from 'node:net';
import creditCardType from 'credit-card-type';
import { isValidPhoneNumber, type CountryCode } from 'libphonenumber-js/max';
import { contextOf, CTX_ADDRESS, CTX_BIRTH, CTX_NATIONAL_ID, CTX_PERSON_NAME, CTX_PHONE, PERSON_NAME_FIELDS } from './field-context.ts';

/**
 * What `veil discover` recognises as personal data: each kind is a validator, not a bare pattern
 * (a card number passes Luhn and falls in an issuer's range, an IBAN passes mod 97, a phone
 * number is valid for its country in libphonenumber's full metadata). Kinds that values alone do
 * not tell apart from other data — a date, a capitalised name, nine bare digits — need the
 * field's own name to say so (FieldContext).
 */
export const KINDS = [
  'email',
  'payment-card',
  'iban',
  'phone',
  'us-ssn',
  'uk-nino',
  'fr-nir',
  'ip-address',
  'date-of-birth',
  'person-name',
  'postal-address',
] as const;
export type Kind = (typeof KINDS)[number];

/** What is known of a value's field: its name (as written, or normalised: lower case, letters and digits only), and its neighbours. */
export interface FieldContext {
  name: string;
  /** the name's context bits (field-context.ts), when the caller has them: else read from `name` */
  bits?: number;
  /** a sibling field of the same object holds an email address or a phone number */
  personalNeighbours?: boolean;
  /** the name of the object holding the field (`profile` for `profile.name`), normalised */
  parent?: string;
}

/** a field name lower-cased with accents and separators dropped: `first_name`, `firstName` → `firstname`, `prénom` → `prenom` */
export function normaliseName(name: string): string {
  return name
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '');
}

const EMAIL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;

export function isEmail(value: string): boolean {
  if (value.length > 254 || !EMAIL.test(value)) return false;
  return value.indexOf('@') <= 64;
}

export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** the networks whose numbers are everywhere: their 15 and 16 digits bare are likely cards (evidence.ts) */
const MAJOR_NETWORKS = new Set(['visa', 'mastercard', 'american-express', 'discover', 'jcb']);

/**
 * The card network whose ranges and lengths hold these digits: `major` (Visa, Mastercard,
 * American Express, Discover, JCB), `other` (Maestro, UnionPay, Diners Club, Mir, Elo, Visa's old 13 digits, …) or
 * `none`. The ranges are Braintree's credit-card-type table (maintained with the networks'
 * changes), not a copy of our own.
 */
export function cardNetwork(digits: string): 'major' | 'other' | 'none' {
  // Visa issued 13-digit numbers until the 2000s and the table has dropped them: still found in a
  // field named card, never as bare digits alone (a GTIN-13 has their length and prefixes)
  let found: 'other' | 'none' = digits.length === 13 && digits[0] === '4' ? 'other' : 'none';
  for (const type of creditCardType(digits)) {
    if (!type.lengths.includes(digits.length)) continue;
    if (MAJOR_NETWORKS.has(type.type)) return 'major';
    found = 'other';
  }
  return found;
}

/** A payment card number: 12–19 digits (spaces or dashes between groups), a network's range and length, Luhn. */
export function isPaymentCard(value: string): boolean {
  if (!/^\d(?:[ -]?\d){11,18}$/.test(value)) return false;
  const digits = value.replace(/[ -]/g, '');
  return luhnValid(digits) && cardNetwork(digits) !== 'none';
}

/** IBAN lengths by country (ISO 13616 registry) */
const IBAN_LENGTHS: Record<string, number> = {
  AD: 24,
  AE: 23,
  AL: 28,
  AT: 20,
  AZ: 28,
  BA: 20,
  BE: 16,
  BG: 22,
  BH: 22,
  BI: 27,
  BR: 29,
  BY: 28,
  CH: 21,
  CR: 22,
  CY: 28,
  CZ: 24,
  DE: 22,
  DK: 18,
  DJ: 27,
  DO: 28,
  EE: 20,
  EG: 29,
  ES: 24,
  FI: 18,
  FO: 18,
  FR: 27,
  GB: 22,
  GE: 22,
  GI: 23,
  GL: 18,
  GR: 27,
  GT: 28,
  HR: 21,
  HU: 28,
  IE: 22,
  IL: 23,
  IQ: 23,
  IR: 26,
  IS: 26,
  IT: 27,
  JO: 30,
  KW: 30,
  KZ: 20,
  LB: 28,
  LC: 32,
  LI: 21,
  LT: 20,
  LU: 20,
  LV: 21,
  LY: 25,
  MC: 27,
  MD: 24,
  ME: 22,
  MK: 19,
  MR: 27,
  MN: 20,
  MT: 31,
  MU: 30,
  NI: 28,
  NL: 18,
  NO: 15,
  OM: 23,
  PK: 24,
  PL: 28,
  PS: 29,
  PT: 25,
  QA: 29,
  RO: 24,
  RS: 22,
  RU: 33,
  SA: 24,
  SC: 31,
  SE: 24,
  SI: 19,
  SK: 24,
  SM: 27,
  SO: 23,
  SD: 18,
  ST: 25,
  SV: 28,
  TL: 23,
  TN: 24,
  TR: 26,
  UA: 29,
  VA: 22,
  VG: 24,
  XK: 20,
  YE: 30,
};

/** An IBAN: a registered country's length, then mod 97 of the rearranged number is 1. */
export function isIban(value: string): boolean {
  const iban = value.replace(/ /g, '').toUpperCase();
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(iban) || IBAN_LENGTHS[iban.slice(0, 2)] !== iban.length) return false;
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let rest = 0;
  for (const c of rearranged) {
    const n = c >= 'A' ? c.charCodeAt(0) - 55 : c.charCodeAt(0) - 48;
    rest = n > 9 ? (rest * 100 + n) % 97 : (rest * 10 + n) % 97;
  }
  return rest === 1;
}

/** countries a national-format number (no +) is tried in, when the field's name says phone */
const NATIONAL: CountryCode[] = ['US', 'GB', 'FR', 'DE', 'ES', 'IT', 'NL', 'BE', 'CH', 'IE', 'CA', 'AU'];
/** dates are digits and separators too: 2024-01-02 is a valid national number somewhere */
const DATE_LIKE = /^(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})$/;

/** A phone number valid for its country: international (+ or 00), or national in a common country when the field says phone. */
export function isPhone(value: string, context: FieldContext): boolean {
  if (!/^[+(\d][\d ()./-]{5,22}(?:\s*(?:x|ext\.?)\s*\d{1,6})?$/i.test(value) || DATE_LIKE.test(value)) return false;
  const number = value.replace(/\s*(?:x|ext\.?)\s*\d{1,6}$/i, '');
  if (number.startsWith('+')) return isValidPhoneNumber(number);
  if (number.startsWith('00')) return isValidPhoneNumber(`+${number.slice(2)}`);
  return (bitsOf(context) & CTX_PHONE) !== 0 && isNationalPhone(number);
}

/** A number without + or 00, valid in one of the common countries' numbering plans (a date is not one). */
export function isNationalPhone(number: string): boolean {
  return !DATE_LIKE.test(number) && NATIONAL.some((country) => isValidPhoneNumber(number, country));
}

function bitsOf(context: FieldContext): number {
  return context.bits ?? contextOf(context.name);
}

/** A US social security number: area not 000, 666 or 9xx, group not 00, serial not 0000; nine bare digits only when the field says so. */
export function isUsSsn(value: string, context: FieldContext): boolean {
  const m = /^(\d{3})-(\d{2})-(\d{4})$/.exec(value) ?? ((bitsOf(context) & CTX_NATIONAL_ID) !== 0 ? /^(\d{3})(\d{2})(\d{4})$/.exec(value) : null);
  if (!m) return false;
  const [, area, group, serial] = m as unknown as [string, string, string, string];
  return area !== '000' && area !== '666' && area[0] !== '9' && group !== '00' && serial !== '0000';
}

/** A UK National Insurance number: HMRC's allowed prefix letters (QQ, the documentation example, is not one), six digits, A–D. */
export function isUkNino(value: string): boolean {
  const nino = value.replace(/ /g, '').toUpperCase();
  return /^(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\d{6}[A-D]$/.test(nino);
}

/** A French NIR (numéro de sécurité sociale): sex, year, month, département (2A/2B for Corsica), commune, order, and its key, 97 − (number mod 97). */
export function isFrNir(value: string): boolean {
  const nir = value.replace(/ /g, '').toUpperCase();
  const m = /^([1-478])(\d{2})(0[1-9]|1[0-2]|[2-9]\d)(\d{2}|2A|2B)(\d{3})(\d{3})(\d{2})$/.exec(nir);
  if (!m) return false;
  const body = nir.slice(0, 13).replace('2A', '19').replace('2B', '18');
  const key = 97 - Number(BigInt(body) % 97n);
  return key === Number(m[7]);
}

export function isIpAddress(value: string): boolean {
  return isIP(value) !== 0;
}

/** A plausible date of birth (ISO, d/m/y or m/d/y; 1900 to today) in a field whose name says birth. */
export function isDateOfBirth(value: string, context: FieldContext, today = new Date()): boolean {
  if ((bitsOf(context) & CTX_BIRTH) === 0) return false;
  let y: number, mo: number, d: number;
  let m = /^(\d{4})-(\d{2})-(\d{2})(?:T00:00:00(?:\.000)?Z?)?$/.exec(value);
  if (m) [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  else if ((m = /^(\d{1,2})[/.](\d{1,2})[/.](\d{4})$/.exec(value))) {
    const [a, b] = [Number(m[1]), Number(m[2])];
    // d/m/y unless that cannot be a month
    [y, mo, d] = b <= 12 ? [Number(m[3]), b, a] : [Number(m[3]), a, b];
  } else return false;
  const date = new Date(Date.UTC(y, mo - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d && y >= 1900 && date.getTime() <= today.getTime();
}

/** names that hold a person's name only beside other personal data, or in a person's object (a product has a `name` too) */
const GENERIC_NAMES = new Set(['name', 'nom', 'holder', 'owner', 'contact', 'recipient']);
const PERSON_OBJECTS =
  /^(profile|customer|person|user|contact|owner|holder|client|patient|employee|member|recipient|sender|billing|shipping|account|cardholder|beneficiary|guardian|applicant)s?$/;
const NAME_TOKEN = /^[\p{L}\p{M}][\p{L}\p{M}'’.-]*$/u;

/**
 * A person's name: one to six words of letters (accents, hyphens, apostrophes, `Dr.`; no digits
 * or symbols), in a field whose name says so — or a generic `name` beside an email or a phone,
 * or in a person's object (`profile.name`, `customers[].name`; not `items[].name`).
 */
export function isPersonName(value: string, context: FieldContext): boolean {
  const generic = GENERIC_NAMES.has(context.name) && (context.personalNeighbours === true || PERSON_OBJECTS.test(context.parent ?? ''));
  if (!(PERSON_NAME_FIELDS.has(context.name) || (bitsOf(context) & CTX_PERSON_NAME) !== 0 || generic) || value.length > 80) return false;
  const tokens = value.trim().split(/\s+/);
  return tokens.length > 0 && tokens.length <= 6 && tokens.every((t) => NAME_TOKEN.test(t));
}

/**
 * A street address in a field named so (`address`, `street`, `addressLine1`; not `ipAddress`):
 * two to twelve words, one of letters, and a house or flat number (or `s/n`), no `@` or URL.
 */
export function isPostalAddress(value: string, context: FieldContext): boolean {
  if ((bitsOf(context) & CTX_ADDRESS) === 0 || value.length < 6 || value.length > 200 || /[@<>{}]|:\/\//.test(value)) return false;
  const words = value
    .trim()
    .split(/[\s,]+/)
    .filter(Boolean);
  // a house number, or Spanish `s/n` (sin número)
  const numbered = /\d/.test(value) || /(?:^|\s)s\/n\.?(?:$|[\s,])/i.test(value);
  // (two words or more: no IP address is one)
  return words.length >= 2 && words.length <= 12 && numbered && words.some((w) => /^\p{L}[\p{L}'’.-]+$/u.test(w));
}

export function detect(kind: Kind, value: string, context: FieldContext): boolean {
  switch (kind) {
    case 'email':
      return isEmail(value);
    case 'payment-card':
      return isPaymentCard(value);
    case 'iban':
      return isIban(value);
    case 'phone':
      return isPhone(value, context);
    case 'us-ssn':
      return isUsSsn(value, context);
    case 'uk-nino':
      return isUkNino(value);
    case 'fr-nir':
      return isFrNir(value);
    case 'ip-address':
      return isIpAddress(value);
    case 'date-of-birth':
      return isDateOfBirth(value, context);
    case 'person-name':
      return isPersonName(value, context);
    case 'postal-address':
      return isPostalAddress(value, context);
  }
}
