import { luhnValid } from '../../src/discover/detectors.ts';

/**
 * Records a drifting producer writes against the shipped example pipeline (email,
 * cards[].number, profile.name, key): each with unique personal values, so that a test can search
 * a clean topic's bytes for every value sent as personal data, and the outcome veil owes it.
 */

/** A Luhn-valid 16-digit Visa number, unique per n: the one check digit discover's validator accepts. */
export function visa(n: number): string {
  const body = `4${String(n).padStart(14, '0')}`;
  return [...'0123456789'].map((d) => body + d).find(luhnValid)!;
}

/** A valid GB IBAN (mod 97), unique per n. */
export function iban(n: number): string {
  const bban = `WEST${String(n).padStart(14, '0')}`;
  const digits = `${bban}GB00`.replace(/[A-Z]/g, (c) => String(c.charCodeAt(0) - 55));
  const check = 98 - Number(BigInt(digits) % 97n);
  return `GB${String(check).padStart(2, '0')}${bban}`;
}

export interface DriftCase {
  /** what drifted, as the issue lists it */
  label: string;
  /** where veil must send it: clean (protected as mapped) or the dead-letter topic with this path and kind */
  expect: { clean: true; fields: string } | { clean: false; path: string; kind: string };
  /** the record (JSON text: a card as a JSON number must stay a number) */
  record(id: number): { key: string; value: string; personal: string[] };
}

const email = (id: number, tag: string) => `${tag}.${id}@example.com`;
const name = (id: number) => `Ann Lee${String.fromCharCode(97 + (id % 26))}${String.fromCharCode(97 + ((id / 26) % 26))}`;

function base(id: number, extra: string, personal: string[], withEmail = true): { key: string; value: string; personal: string[] } {
  const e = email(id, 'ann');
  const card = visa(id);
  const fields = [
    `"id":${id}`,
    ...(withEmail ? [`"email":"${e}"`] : []),
    `"cards":[{"number":"${card}","exp":"12/30"}]`,
    `"profile":{"name":"${name(id)}","tier":"gold"}`,
    extra,
  ].filter(Boolean);
  return { key: e, value: `{${fields.join(',')}}`, personal: [e, card, name(id), ...personal] };
}

export const DRIFT_CASES: DriftCase[] = [
  {
    label: 'Email (case variant)',
    expect: { clean: true, fields: 'email,cards[].number,profile.name,(key)' },
    record: (id) => {
      const e = email(id, 'case');
      return {
        key: e,
        value: `{"id":${id},"Email":"${e}","cards":[{"number":"${visa(id)}"}],"profile":{"name":"${name(id)}"}}`,
        personal: [e, visa(id), name(id)],
      };
    },
  },
  {
    label: 'cards[].Number (case variant)',
    expect: { clean: true, fields: 'email,cards[].number,profile.name,(key)' },
    record: (id) => {
      const e = email(id, 'num');
      return {
        key: e,
        value: `{"id":${id},"email":"${e}","cards":[{"Number":"${visa(id)}"}],"profile":{"name":"${name(id)}"}}`,
        personal: [e, visa(id), name(id)],
      };
    },
  },
  {
    label: 'emailAddress (renamed)',
    expect: { clean: false, path: 'emailAddress', kind: 'email' },
    record: (id) => base(id, `"emailAddress":"${email(id, 'renamed')}"`, [email(id, 'renamed')], false),
  },
  {
    label: 'cardNumber (renamed)',
    expect: { clean: false, path: 'cardNumber', kind: 'payment-card' },
    record: (id) => base(id, `"cardNumber":"${visa(id + 500_000)}"`, [visa(id + 500_000)]),
  },
  {
    label: 'contact.email (moved)',
    expect: { clean: false, path: 'contact.email', kind: 'email' },
    record: (id) => base(id, `"contact":{"email":"${email(id, 'moved')}"}`, [email(id, 'moved')], false),
  },
  {
    label: 'payment.card.number (moved)',
    expect: { clean: false, path: 'payment.card.number', kind: 'payment-card' },
    record: (id) => base(id, `"payment":{"card":{"number":"${visa(id + 600_000)}"}}`, [visa(id + 600_000)]),
  },
  {
    label: 'backupEmail (added)',
    expect: { clean: false, path: 'backupEmail', kind: 'email' },
    record: (id) => base(id, `"backupEmail":"${email(id, 'backup')}"`, [email(id, 'backup')]),
  },
  { label: 'iban (added)', expect: { clean: false, path: 'iban', kind: 'iban' }, record: (id) => base(id, `"iban":"${iban(id)}"`, [iban(id)]) },
  {
    label: 'profile.contacts[].email (a new nested list)',
    expect: { clean: false, path: 'profile.contacts[].email', kind: 'email' },
    record: (id) => {
      const r = base(id, '', []);
      const nested = email(id, 'nested');
      return { ...r, value: r.value.replace('"tier":"gold"}', `"tier":"gold","contacts":[{"email":"${nested}"}]}`), personal: [...r.personal, nested] };
    },
  },
  {
    label: 'an address as an object key',
    expect: { clean: false, path: 'byEmail.*', kind: 'email' },
    record: (id) => base(id, `"byEmail":{"${email(id, 'bykey')}":{"since":2020}}`, [email(id, 'bykey')]),
  },
  {
    label: 'cardNumber as a JSON number',
    expect: { clean: false, path: 'cardNumber', kind: 'payment-card' },
    record: (id) => base(id, `"cardNumber":${visa(id + 700_000)}`, [visa(id + 700_000)]),
  },
  {
    label: 'free text that is not personal data',
    expect: { clean: true, fields: 'email,cards[].number,profile.name,(key)' },
    record: (id) => base(id, `"note":"please deliver after 5pm, order ${id} of 3 boxes","status":"active"`, []),
  },
  {
    label: 'decoys',
    expect: { clean: true, fields: 'email,cards[].number,profile.name,(key)' },
    record: (id) =>
      base(
        id,
        `"orderId":"ORD-2024-${String(id).padStart(6, '0')}","uuid":"0f8fad5b-d9cb-469f-a165-${String(id).padStart(12, '0')}","sku":"SKU-88231-XL","version":"10.2.${id}","postcode":"SW1A 1AA","ts":"2024-03-01T10:00:00Z","total":1234.5,"luhnInvalid":"${visa(id).slice(0, 15)}${(Number(visa(id).at(-1)) + 1) % 10}"`,
        [],
      ),
  },
];
