import { isValidPhoneNumber } from 'libphonenumber-js/max';
import {
  cardNetwork,
  isDateOfBirth,
  isEmail,
  isFrNir,
  isIban,
  isNationalPhone,
  isPersonName,
  isPostalAddress,
  isUkNino,
  isUsSsn,
  luhnValid,
} from '../discover/index.ts';
import { CTX_ADDRESS, CTX_BIRTH, CTX_CARD, CTX_NATIONAL_ID, CTX_NEGATIVE, CTX_PERSON_NAME, CTX_PHONE } from '../discover/index.ts';
import type { GuardKind, Shape } from './value-kinds.ts';

/**
 * How strongly a value is personal data (1 very unlikely … 5 very likely), from the value's own
 * evidence, raised or lowered by its field's name (contextOf), as Presidio and Google Sensitive
 * Data Protection score findings:
 *
 * - the value alone: a check that random data rarely passes (Luhn and a card network's range and
 *   length, mod 97, a country's numbering plan) and formatting that only the kind uses (card
 *   digits grouped 4-4-4-4, `+` before a phone number, `123-45-6789`) give most; bare digits
 *   that a code, an id or a counter can also be (GTINs, order ids, tracking numbers) give less;
 * - the field's name: a word naming the kind (`card`, `tel`, `ssn`) raises it by 2; a name saying
 *   its values are codes or ids (`gtin`, `orderId`, `cellId`) lowers it by 2 (by 1 where the
 *   formatting alone is proof).
 *
 * docs/stream.md ("What the guard needs to call a value personal") tabulates the result.
 */
export interface Graded {
  kind: GuardKind;
  level: number;
}

/** the levels findings are graded in (value-kinds.ts LIKELIHOODS) */
export const VERY_LIKELY = 5;
export const LIKELY = 4;
export const POSSIBLE = 3;
export const UNLIKELY = 2;

/** a level moved by the name's context: +2 for a word naming the kind, −2 (−1 for proof by format) for a negative name */
function inContext(level: number, ctx: number, kindBit: number, formatted: boolean): number {
  if ((ctx & kindBit) !== 0) return Math.min(VERY_LIKELY, level + 2);
  if ((ctx & CTX_NEGATIVE) !== 0) return level - (formatted ? 1 : 2);
  return level;
}

/** card digits grouped as the networks print them: 4-4-4-4(-3), 4-6-5 (American Express), 4-6-4 (Diners Club) */
const CARD_GROUPS = /^\d{4}([ -])\d{4}\1\d{4}\1\d{4}(?:\1\d{1,3})?$|^\d{4}([ -])\d{6}\2\d{4,5}$/;
const SSN_DASHED = /^\d{3}-\d{2}-\d{4}$/;
const PHONE_FORMATTING = /[ ()./-]/;

/** The likeliest kind `text` is (of the shape given), graded in its field's context; undefined if no validator accepts it. */
export function gradedKind(text: string, shape: Shape, ctx: number): Graded | undefined {
  if (shape.at) return isEmail(text) ? { kind: 'email', level: inContext(VERY_LIKELY, ctx, 0, true) } : undefined;
  let best: Graded | undefined;
  const consider = (kind: GuardKind, level: number) => {
    if (best === undefined || level > best.level) best = { kind, level };
  };
  const { letters, digits } = shape;
  if (letters === 0) {
    if (digits >= 12 && digits <= 19) gradeCard(text, ctx, consider);
    if (digits === 9 && isUsSsn(text, { name: '', bits: CTX_NATIONAL_ID })) {
      const dashed = SSN_DASHED.test(text);
      consider('us-ssn', inContext(dashed ? LIKELY : UNLIKELY, ctx, CTX_NATIONAL_ID, dashed));
    }
    if (digits === 15 && isFrNir(text)) consider('fr-nir', inContext(text.includes(' ') ? VERY_LIKELY : POSSIBLE, ctx, CTX_NATIONAL_ID, text.includes(' ')));
  } else {
    if (shape.ibanStart && isIban(text)) consider('iban', inContext(VERY_LIKELY, ctx, 0, true));
    if (digits === 6 && letters === 3 && isUkNino(text))
      consider('uk-nino', inContext(text.includes(' ') ? VERY_LIKELY : LIKELY, ctx, CTX_NATIONAL_ID, text.includes(' ')));
    if (digits === 13 && letters === 2 && isFrNir(text)) consider('fr-nir', inContext(LIKELY, ctx, CTX_NATIONAL_ID, false));
  }
  if (digits >= 6 && ((ctx & CTX_PHONE) !== 0 || shape.international)) gradePhone(text, ctx, consider);
  if ((ctx & CTX_BIRTH) !== 0 && digits >= 4 && isDateOfBirth(text, { name: '', bits: ctx })) consider('date-of-birth', LIKELY);
  if ((ctx & CTX_PERSON_NAME) !== 0 && digits === 0 && isPersonName(text, { name: '', bits: ctx })) consider('person-name', LIKELY);
  if ((ctx & CTX_ADDRESS) !== 0 && digits > 0 && isPostalAddress(text, { name: '', bits: ctx })) consider('postal-address', LIKELY);
  return best;
}

/**
 * A card number: Luhn, and a network's range and length (cardNetwork). Grouped as cards are
 * printed, very likely. Bare digits are what order ids, GTINs, account ids and tracking numbers
 * are too (one random 16-digit id in 30 passes Luhn in a major network's range): possible for
 * the major networks' 15 and 16 digits, unlikely for the others (Maestro, UnionPay, Diners Club…
 * share lengths and prefixes with GTINs), until the field's name says card (+2: likely, or very
 * likely).
 */
function gradeCard(text: string, ctx: number, consider: (kind: GuardKind, level: number) => void): void {
  if (!/^\d(?:[ -]?\d){11,18}$/.test(text)) return;
  const digits = text.replace(/[ -]/g, '');
  if (!luhnValid(digits)) return;
  const network = cardNetwork(digits);
  if (network === 'none') return;
  const grouped = CARD_GROUPS.test(text);
  const level = grouped ? VERY_LIKELY : network === 'major' && (digits.length === 15 || digits.length === 16) ? POSSIBLE : UNLIKELY;
  consider('payment-card', inContext(level, ctx, CTX_CARD, grouped));
}

/**
 * A phone number valid in its country's numbering plan (libphonenumber's full metadata): with
 * `+`, very likely; with `00`, likely when written with separators and unlikely as bare digits
 * (GTINs written with leading zeros, SSCCs); national, only in a field named so.
 */
function gradePhone(text: string, ctx: number, consider: (kind: GuardKind, level: number) => void): void {
  if (!/^[+(\d][\d ()./-]{5,22}(?:\s*(?:x|ext\.?)\s*\d{1,6})?$/i.test(text)) return;
  const number = text.replace(/\s*(?:x|ext\.?)\s*\d{1,6}$/i, '');
  if (number.startsWith('+')) {
    if (isValidPhoneNumber(number)) consider('phone', inContext(VERY_LIKELY, ctx, CTX_PHONE, true));
    return;
  }
  const phoneField = (ctx & CTX_PHONE) !== 0;
  if (number.startsWith('00')) {
    const formatted = PHONE_FORMATTING.test(number);
    // a bare 00… reaches the threshold only in a phone field: skip the lookup otherwise
    if ((formatted || phoneField) && isValidPhoneNumber(`+${number.slice(2)}`)) {
      consider('phone', inContext(formatted ? LIKELY : UNLIKELY, ctx, CTX_PHONE, formatted));
      return;
    }
  }
  if (phoneField && isNationalPhone(number)) consider('phone', LIKELY);
}
