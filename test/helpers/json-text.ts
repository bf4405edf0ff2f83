// fast-check generators of JSON text, shared by the scanner's tests (test/json-bytes) and the
// stream serde's (test/stream/serde/json-splice.test.ts).
import fc from 'fast-check';

// JSON text with the variety JSON.stringify never writes: whitespace, escapes, number spellings
export const ws = fc.constantFrom('', '', ' ', '  ', '\n', '\t', '\r\n  ');
const digits = (minLength: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength, maxLength: 22 });
const numberText = fc
  .tuple(
    fc.boolean(),
    fc.oneof(
      fc.constant('0'),
      fc.tuple(fc.constantFrom(...'123456789'), digits(0)).map(([a, b]) => a + b),
    ),
    fc.option(digits(1)),
    fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), digits(1))),
  )
  .map(([neg, int, frac, exp]) => `${neg ? '-' : ''}${int}${frac === null ? '' : `.${frac}`}${exp === null ? '' : exp.join('')}`);
const rawChar = fc
  .oneof(fc.constantFrom('a', 'Z', ' ', 'é', '😀', '\u2028', '\u007f', '/'), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }))
  .filter((c) => c.isWellFormed() && c !== '"' && c !== '\\' && c.charCodeAt(0) >= 0x20);
const escape = fc.oneof(
  fc.constantFrom('\\"', '\\\\', '\\/', '\\b', '\\f', '\\n', '\\r', '\\t', '\\u00e9', '\\u00E9', '\\ud83d\\ude00'),
  fc.integer({ min: 0, max: 0xffff }).map((n) => `\\u${n.toString(16).padStart(4, '0')}`),
);
export const stringText = fc
  .array(fc.oneof({ weight: 3, arbitrary: rawChar }, { weight: 1, arbitrary: escape }), { maxLength: 10 })
  .map((parts) => `"${parts.join('')}"`);
const keyText = fc.oneof(stringText, fc.constantFrom('"email"', '"x"', '"\\u0065mail"'));
export const { value: valueText } = fc.letrec<{ value: string; array: string; object: string }>((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, numberText, stringText, fc.constantFrom('true', 'false', 'null'), tie('array'), tie('object')),
  array: fc
    .tuple(ws, fc.array(fc.tuple(ws, tie('value'), ws), { maxLength: 4 }))
    .map(([w, items]) => `[${items.length === 0 ? w : items.map((i) => i.join('')).join(',')}]`),
  object: fc
    .tuple(ws, fc.array(fc.tuple(ws, keyText, ws, ws, tie('value'), ws), { maxLength: 4 }))
    .map(([w, members]) => `{${members.length === 0 ? w : members.map(([a, k, b, c, v, d]) => `${a}${k}${b}:${c}${v}${d}`).join(',')}}`),
}));
