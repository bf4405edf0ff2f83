import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValueError, VeilError, type Chain, type KeyProvider } from '../../src/engine/index.ts';
import { EXAMPLE_CONFIG_TEXT, engineFixture } from '../helpers/engine-fixture.ts';

/**
 * Chain.many (a batch of values, FF1 rounds in lockstep on node:crypto's AES) answers exactly
 * what the chain answers value by value: the same outputs, and for a refused value a ValueError
 * with the same code and message, wherever it sits in the batch.
 */
const LUHN_AND_TWO_STEPS = `${EXAMPLE_CONFIG_TEXT.replace(
  'classes:',
  `  card-luhn:
    steps:
      - { type: ff1, key: pan-ff1, alphabet: digits, keepFirst: 6, keepLast: 4, luhn: true }
  two-steps:
    steps:
      - { type: ff1, key: pan-ff1, alphabet: digits }
      - { type: aes-siv, key: customer-siv }

classes:
  Extra:
    properties:
      luhnCard: { protect: card-luhn }
      twoSteps: { protect: two-steps }`,
)}`.replace("fields: ['Customer.*'] }", "fields: ['Customer.*', 'Extra.*'] }");

const { engine } = engineFixture(LUHN_AND_TWO_STEPS);
const bind = (className: string, propertyName: string, roles: string[], act: string): Chain =>
  engine.bind({
    identity: { roles },
    rightsEvidences: roles.map((value) => ({ name: 'Role', value })),
    processingEvidences: [{ name: 'Action', value: act }],
    fields: [{ className, propertyName }],
  }).transforms[0]!;

function one(chain: Chain, value: string): string | { code: string; message: string } {
  try {
    return chain(value);
  } catch (e) {
    if (!(e instanceof ValueError)) throw e;
    return { code: e.code, message: e.message };
  }
}
const asPlain = (r: string | ValueError) => (typeof r === 'string' ? r : { code: r.code, message: r.message });

const digits = fc.stringMatching(/^[0-9]{0,24}$/);
const card = fc
  .tuple(fc.stringMatching(/^[0-9]{12,19}$/), fc.constantFrom('', '-', ' '))
  .map(([d, sep]) => (sep ? d.replace(/(\d{4})(?=\d)/g, `$1${sep}`) : d));
const alnum = fc.stringMatching(/^[0-9A-Z]{0,20}$/);
const junk = fc.constantFrom('', 'not a number', 'x'.repeat(5000), '\ud800', '1234', '١٢٣٤٥٦٧٨٩٠١٢', '0'.repeat(5000));

describe('Chain.many equals the chain value by value', () => {
  const deterministic: [string, string, fc.Arbitrary<string>][] = [
    ['Customer', 'cardNumber', fc.oneof(card, digits, junk)],
    ['Customer', 'nationalId', fc.oneof(alnum, junk)],
    ['Customer', 'email', fc.oneof(fc.emailAddress(), junk)],
    ['Customer', 'segmentKey', fc.oneof(fc.string(), junk)],
    ['Extra', 'luhnCard', fc.oneof(card, junk)],
    ['Extra', 'twoSteps', fc.oneof(digits, junk)],
  ];
  for (const [className, propertyName, values] of deterministic) {
    it(`protect ${className}.${propertyName}: outputs and refusals, batches of 0 to 60 mixed values`, () => {
      const protect = bind(className, propertyName, ['ingest'], 'Protect');
      fc.assert(
        fc.property(fc.array(values, { maxLength: 60 }), (batch) => {
          expect(protect.many(batch).map(asPlain)).toEqual(batch.map((v) => one(protect, v)));
        }),
        { numRuns: 60 },
      );
    });
  }

  it('FF1 batches of one length (the native lockstep path): protect and unprotect equal one by one', () => {
    const same: [string, fc.Arbitrary<string>][] = [
      ['nationalId', fc.stringMatching(/^[0-9A-Z]{16}$/)],
      ['cardNumber', fc.stringMatching(/^[0-9]{16}$/)],
    ];
    for (const [propertyName, value] of same) {
      const protect = bind('Customer', propertyName, ['ingest'], 'Protect');
      const reveal = bind('Customer', propertyName, ['fraud'], 'Unprotect');
      fc.assert(
        fc.property(fc.array(value, { minLength: 4, maxLength: 200 }), fc.array(junk, { maxLength: 5 }), (batch, refused) => {
          const mixed = [...refused, ...batch];
          const out = protect.many(mixed);
          expect(out.map(asPlain)).toEqual(mixed.map((v) => one(protect, v)));
          const strings = out.filter((r): r is string => typeof r === 'string');
          expect(reveal.many(strings)).toEqual(strings.map((v) => reveal(v)));
        }),
        { numRuns: 25 },
      );
    }
    for (const [propertyName, value] of [
      ['luhnCard', fc.stringMatching(/^[0-9]{16}$/)],
      ['twoSteps', fc.stringMatching(/^[0-9]{12}$/)],
    ] as const) {
      const protect = bind('Extra', propertyName, ['ingest'], 'Protect');
      fc.assert(
        fc.property(fc.array(value, { minLength: 4, maxLength: 200 }), (batch) => {
          expect(protect.many(batch).map(asPlain)).toEqual(batch.map((v) => one(protect, v)));
        }),
        { numRuns: 25 },
      );
    }
  });

  it('unprotect of FF1 values: the batch inverts the batch, and refuses what one call refuses', () => {
    const protect = bind('Customer', 'nationalId', ['ingest'], 'Protect');
    const reveal = bind('Customer', 'nationalId', ['fraud'], 'Unprotect');
    fc.assert(
      fc.property(fc.array(fc.oneof(alnum, junk), { maxLength: 60 }), (batch) => {
        const protectedValues = protect.many(batch).map((r) => (typeof r === 'string' ? r : 'refused!'));
        expect(reveal.many(protectedValues).map(asPlain)).toEqual(protectedValues.map((v) => one(reveal, v)));
        protect.many(batch).forEach((r, i) => {
          if (typeof r === 'string') expect(reveal(r)).toBe(batch[i]);
        });
      }),
      { numRuns: 60 },
    );
  });

  it("unprotect of AES-SIV (email) and AES-GCM (name) values: the batch answers what one call answers — outputs, tampered and truncated values, junk, another field's values", () => {
    const edits = (v: string) => [v, v.slice(0, -1) + (v.endsWith('A') ? 'B' : 'A'), v.slice(0, 12), `${v}AA`, v.replace(/^./, 'Z')];
    for (const [propertyName, other] of [
      ['email', 'name'],
      ['name', 'email'],
    ] as const) {
      const protect = bind('Customer', propertyName, ['ingest'], 'Protect');
      const foreign = bind('Customer', other, ['ingest'], 'Protect');
      const reveal = bind('Customer', propertyName, ['fraud'], 'Unprotect');
      fc.assert(
        fc.property(fc.array(fc.oneof(fc.string(), fc.emailAddress()), { maxLength: 30 }), fc.array(junk, { maxLength: 4 }), (batch, refused) => {
          const outputs = protect.many(batch).filter((r): r is string => typeof r === 'string');
          const mixed = [...outputs.flatMap(edits), ...refused, ...foreign.many(batch.slice(0, 3)).filter((r): r is string => typeof r === 'string')];
          expect(reveal.many(mixed).map(asPlain)).toEqual(mixed.map((v) => one(reveal, v)));
          expect(reveal.many(outputs)).toEqual(batch.filter((_, i) => typeof protect.many([batch[i]!])[0] === 'string'));
        }),
        { numRuns: 40 },
      );
    }
  });

  it('randomized AES-GCM: every output of a batch opens to its value; refusals match', () => {
    const protect = bind('Customer', 'name', ['ingest'], 'Protect');
    const reveal = bind('Customer', 'name', ['fraud'], 'Unprotect');
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string(), junk), { maxLength: 40 }), (batch) => {
        const out = protect.many(batch);
        out.forEach((r, i) => {
          const single = one(protect, batch[i]!);
          if (typeof r === 'string') expect(reveal(r)).toBe(batch[i]);
          else expect(asPlain(r)).toEqual(single);
          expect(typeof r === 'string').toBe(typeof single === 'string');
        });
      }),
      { numRuns: 40 },
    );
  });

  it("an error that is not the value's (a key version the keystore lacks) throws from many as from one", () => {
    const fixture = engineFixture();
    const panId = fixture.config.keys.get('pan-ff1')!.id;
    // a keystore that knows the key but cannot give its material
    const hollow: KeyProvider = { info: (id) => fixture.keys.info(id), key: (id, v) => (id === panId ? undefined : fixture.keys.key(id, v)) };
    const { engine: broken } = engineFixture(EXAMPLE_CONFIG_TEXT, { keys: hollow });
    const chain = broken.bind({
      identity: { roles: ['ingest'] },
      rightsEvidences: [{ name: 'Role', value: 'ingest' }],
      processingEvidences: [{ name: 'Action', value: 'Protect' }],
      fields: [{ className: 'Customer', propertyName: 'nationalId' }],
    }).transforms[0]!;
    const values = Array.from({ length: 20 }, (_, i) => `AB${String(i).padStart(10, '0')}`);
    expect(() => chain(values[0]!)).toThrow(VeilError);
    expect(() => chain.many(values)).toThrow(VeilError);
    expect(() => chain.many(values)).toThrow(/has no version/);
  });
});
