// The labelled corpus of bench:discover (faker data of several locales, seeded, with decoys:
// Luhn-invalid numbers, order ids, UUIDs, SKUs, version strings, postcodes, product names, other
// dates, IBAN-shaped account numbers whose check digits are wrong), shared with the unmapped guard's
// false-positive test.
import { fakerDE, fakerEN_GB, fakerEN_US, fakerES, fakerFR, fakerIT, fakerNL, type Faker } from '@faker-js/faker';
import { getExampleNumber, isValidPhoneNumber, type CountryCode } from 'libphonenumber-js/max';
import examples from 'libphonenumber-js/mobile/examples';
import type { Kind } from '../src/discover/detectors.ts';

export const locales: [Faker, CountryCode][] = [
  [fakerEN_US, 'US'],
  [fakerEN_GB, 'GB'],
  [fakerDE, 'DE'],
  [fakerFR, 'FR'],
  [fakerES, 'ES'],
  [fakerIT, 'IT'],
  [fakerNL, 'NL'],
];
locales.forEach(([f], i) => f.seed(20261125 + i));

/** what each field of a generated record is: a kind, or null (a decoy or plain data) */
export const LABELS: Record<string, Kind | null> = {
  email: 'email',
  'contact.phone': 'phone',
  'payment.card': 'payment-card',
  'payment.iban': 'iban',
  ssn: 'us-ssn',
  nino: 'uk-nino',
  nir: 'fr-nir',
  'session.ip': 'ip-address',
  dateOfBirth: 'date-of-birth',
  fullName: 'person-name',
  'contacts[].name': 'person-name',
  'contacts[].email': 'email',
  homeAddress: 'postal-address',
  'items[].name': null,
  'items[].sku': null,
  invoiceNumber: null,
  orderId: null,
  uuid: null,
  version: null,
  createdAt: null,
  productName: null,
  city: null,
  username: null,
  trackingNumber: null,
  account: null,
  postcode: null,
  amount: null,
};

function digits(f: Faker, n: number): string {
  return Array.from({ length: n }, () => f.number.int(9)).join('');
}

/** the Luhn check digit of `body` (the bench's corpora share it) */
export function luhnDigit(body: string): number {
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    let d = Number(body[body.length - 1 - i]);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return (10 - (sum % 10)) % 10;
}

function phone(f: Faker, country: CountryCode): string {
  const example = getExampleNumber(country, examples)!;
  for (;;) {
    const national = example.nationalNumber.slice(0, -4) + digits(f, 4);
    const e164 = `+${example.countryCallingCode}${national}`;
    if (isValidPhoneNumber(e164)) return f.datatype.boolean() ? e164 : `+${example.countryCallingCode} ${national}`;
  }
}

function nino(f: Faker): string {
  const first = 'ABCEGHJKLMNOPRSTWXYZ';
  const second = 'ABCEGHJKLMNPRSTWXYZ';
  for (;;) {
    const prefix = f.helpers.arrayElement([...first]) + f.helpers.arrayElement([...second]);
    if (!['BG', 'GB', 'KN', 'NK', 'NT', 'TN', 'ZZ'].includes(prefix)) return `${prefix}${digits(f, 6)}${f.helpers.arrayElement(['A', 'B', 'C', 'D'])}`;
  }
}

function nir(f: Faker): string {
  const body = `${f.helpers.arrayElement(['1', '2'])}${String(f.number.int({ min: 40, max: 99 }))}${String(f.number.int({ min: 1, max: 12 })).padStart(2, '0')}${String(f.number.int({ min: 1, max: 95 })).padStart(2, '0')}${digits(f, 3)}${digits(f, 3)}`;
  return body + String(97 - Number(BigInt(body) % 97n)).padStart(2, '0');
}

function ssn(f: Faker): string {
  return `${f.number.int({ min: 1, max: 665 }).toString().padStart(3, '0')}-${f.number.int({ min: 1, max: 99 }).toString().padStart(2, '0')}-${f.number.int({ min: 1, max: 9999 }).toString().padStart(4, '0')}`;
}

/** an account number shaped as a GB IBAN whose check digits are wrong: the decoy of an IBAN, as a
 * Luhn-invalid number is the decoy of a card (random check digits would make one in 97 a valid
 * IBAN, which is an IBAN by every test there is, not a decoy) */
function ibanInvalid(f: Faker): string {
  const bban = `WEST${digits(f, 14)}`;
  const numeric = [...`${bban}GB00`].map((c) => (/\d/.test(c) ? c : String(c.charCodeAt(0) - 55))).join('');
  const valid = 98 - Number(BigInt(numeric) % 97n);
  const wrong = ((valid - 2 + 1 + f.number.int(95)) % 97) + 2;
  return `GB${String(wrong).padStart(2, '0')}${bban}`;
}

function luhnInvalid(f: Faker): string {
  const body = `4${digits(f, 14)}`;
  return body + String((luhnDigit(body) + 1 + f.number.int(8)) % 10);
}

export function record(i: number): Record<string, unknown> {
  const [f, country] = locales[i % locales.length]!;
  return {
    email: f.internet.email(),
    contact: { phone: phone(f, country) },
    payment: {
      card: f.finance.creditCardNumber({ issuer: f.helpers.arrayElement(['visa', 'mastercard', 'amex', 'discover', 'jcb']) }),
      iban: f.finance.iban({ formatted: f.datatype.boolean() }),
    },
    ssn: ssn(f),
    nino: nino(f),
    nir: nir(f),
    session: { ip: f.datatype.boolean() ? f.internet.ipv4() : f.internet.ipv6() },
    dateOfBirth: f.date.birthdate().toISOString().slice(0, 10),
    fullName: f.person.fullName(),
    contacts: [
      { name: f.person.fullName(), email: f.internet.email() },
      { name: `${f.person.firstName()} ${f.person.lastName()}`, email: f.internet.email() },
    ],
    items: [
      { name: f.commerce.productName(), sku: `SKU-${digits(f, 5)}` },
      { name: f.commerce.productName(), sku: `SKU-${digits(f, 5)}` },
    ],
    invoiceNumber: luhnInvalid(f),
    orderId: `ORD-${f.number.int({ min: 2020, max: 2026 })}-${digits(f, 6)}`,
    uuid: f.string.uuid(),
    version: f.system.semver(),
    createdAt: f.date.past().toISOString(),
    productName: f.commerce.productName(),
    city: f.location.city(),
    username: f.internet.username(),
    trackingNumber: digits(f, 9),
    account: ibanInvalid(f),
    postcode: f.location.zipCode(),
    amount: f.number.int({ min: 1, max: 99999 }),
    homeAddress: f.location.streetAddress(),
  };
}

/** each labelled field's values, in document order */
export function valuesAt(r: unknown, path: string): string[] {
  let nodes: unknown[] = [r];
  for (const step of path.split('.')) {
    const each = step.endsWith('[]');
    const key = each ? step.slice(0, -2) : step;
    nodes = nodes.flatMap((n) => {
      const v = (n as Record<string, unknown>)[key];
      return each ? (v as unknown[]) : [v];
    });
  }
  return nodes.map(String);
}

/** record i without its labelled personal fields: decoys and plain data only */
export function decoyRecord(i: number): Record<string, unknown> {
  const r = record(i);
  return {
    items: r.items,
    invoiceNumber: r.invoiceNumber,
    orderId: r.orderId,
    uuid: r.uuid,
    version: r.version,
    createdAt: r.createdAt,
    productName: r.productName,
    city: r.city,
    username: r.username,
    trackingNumber: r.trackingNumber,
    account: r.account,
    postcode: r.postcode,
    amount: r.amount,
  };
}
