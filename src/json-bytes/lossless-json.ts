import { isLosslessNumber, LosslessNumber, parse, stringify } from 'lossless-json';

/**
 * JSON read and written without touching its numbers, for the schemas veil derives (clean JSON
 * Schemas, clean Avro schemas): every number stays the text it was written as — `18446744073709551615`,
 * `9007199254740993`, `1.0`, `-0`, `1e400` — where `JSON.parse` would make it the nearest double
 * (`18446744073709552000`, `9007199254740992`, `1`, `0`, `Infinity`) and `JSON.stringify` write
 * that. Built on lossless-json (josdejong): its parser keeps each number as a LosslessNumber
 * (the digits as written), its printer writes them back as they are.
 *
 * Otherwise this is `JSON.parse`: the same grammar, an object's `__proto__` key an ordinary own
 * property, and a duplicated key its last value in the place of its first (lossless-json would
 * refuse a duplicate with a different value). The printer is `JSON.stringify`'s compact form:
 * keys in insertion order, strings escaped as it escapes them.
 */
export type LosslessJson = null | boolean | string | LosslessNumber | LosslessJson[] | { [key: string]: LosslessJson };
export type LosslessObject = { [key: string]: LosslessJson };

export { LosslessNumber };

/** Parses JSON text with every number kept as written; throws a SyntaxError where `JSON.parse` would. */
export function parseLossless(text: string): LosslessJson {
  return parse(text, null, { onDuplicateKey: ({ newValue }) => newValue }) as LosslessJson;
}

/** Compact JSON text of a value read by parseLossless (or built from its parts): numbers as written. */
export function printLossless(value: LosslessJson): string {
  const text = stringify(value);
  if (text === undefined) throw new TypeError('the value has no JSON text');
  return text;
}

/** Whether a value is a number read by parseLossless (an object in JS: test this before isObject). */
export const isJsonNumber = (value: unknown): value is LosslessNumber => isLosslessNumber(value);

/** A JSON object (not an array, not a number). */
export const isJsonObject = (value: unknown): value is LosslessObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !isLosslessNumber(value);

/**
 * A deep copy (numbers, being immutable, shared): what `structuredClone` would do, which must not
 * be used here — it turns a LosslessNumber into a plain object that prints as `{"value": …}`.
 */
export function cloneLossless<T extends LosslessJson>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => cloneLossless(v)) as T;
  if (isJsonObject(value)) {
    const out: LosslessObject = {};
    for (const [k, v] of Object.entries(value)) define(out, k, cloneLossless(v));
    return out as T;
  }
  return value;
}

/** `object[key] = value` that stores a `__proto__` key as an own property (as JSON.parse does). */
export function define(object: LosslessObject, key: string, value: LosslessJson): void {
  if (key === '__proto__') Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  else object[key] = value;
}

/**
 * The value `JSON.parse` would have given (numbers as the nearest double), or — with
 * `bigIntegers` — an integer written without fraction or exponent beyond ±2^53 as a bigint.
 */
export function toPlain(value: LosslessJson, bigIntegers = false): unknown {
  if (isJsonNumber(value)) return numberValue(value, bigIntegers);
  if (Array.isArray(value)) return value.map((v) => toPlain(v, bigIntegers));
  if (isJsonObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) define(out as LosslessObject, k, toPlain(v, bigIntegers) as LosslessJson);
    return out;
  }
  return value;
}

/** a number's JS value: the nearest double, or (with `bigIntegers`) a bigint for an integer beyond ±2^53 */
export function numberValue(n: LosslessNumber, bigIntegers = false): number | bigint {
  const double = Number(n.value);
  if (bigIntegers && !Number.isSafeInteger(double) && /^-?\d+$/.test(n.value)) return BigInt(n.value);
  return double;
}
