// npm run bench:discover — precision and recall of each `veil discover` detector on a labelled
// corpus this bench generates (faker data of several locales, with decoys: Luhn-invalid numbers,
// order ids, UUIDs, version strings, product names, other dates), and the time to profile 10,000
// records from a JSON-lines file beside the bare read-and-parse of the same file (the baseline).
// BENCH_RECORDS sets the corpus size (default 10,000).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakerDE, fakerEN_GB, fakerEN_US, fakerES, fakerFR, fakerIT, fakerNL, type Faker } from '@faker-js/faker';
import { getExampleNumber, isValidPhoneNumber, type CountryCode } from 'libphonenumber-js/max';
import examples from 'libphonenumber-js/mobile/examples';
import { detect, KINDS, normaliseName, type Kind } from '../src/discover/detectors.ts';
import { Profiler } from '../src/discover/profile.ts';
import { fmt, ratio } from './measure.ts';

const N = Number(process.env.BENCH_RECORDS ?? 10_000);
const locales: [Faker, CountryCode][] = [[fakerEN_US, 'US'], [fakerEN_GB, 'GB'], [fakerDE, 'DE'], [fakerFR, 'FR'], [fakerES, 'ES'], [fakerIT, 'IT'], [fakerNL, 'NL']];
locales.forEach(([f], i) => f.seed(20261125 + i));

/** what each field of a generated record is: a kind, or null (a decoy or plain data) */
const LABELS: Record<string, Kind | null> = {
  email: 'email', 'contact.phone': 'phone', 'payment.card': 'payment-card', 'payment.iban': 'iban', ssn: 'us-ssn', nino: 'uk-nino', nir: 'fr-nir',
  'session.ip': 'ip-address', dateOfBirth: 'date-of-birth', fullName: 'person-name', 'contacts[].name': 'person-name', 'contacts[].email': 'email',
  'items[].name': null, 'items[].sku': null,
  invoiceNumber: null, orderId: null, uuid: null, version: null, createdAt: null, productName: null, city: null, username: null, trackingNumber: null, account: null, amount: null,
};

function digits(f: Faker, n: number): string {
  return Array.from({ length: n }, () => f.number.int(9)).join('');
}

function luhnDigit(body: string): number {
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

function luhnInvalid(f: Faker): string {
  const body = `4${digits(f, 14)}`;
  return body + String((luhnDigit(body) + 1 + f.number.int(8)) % 10);
}

function record(i: number): Record<string, unknown> {
  const [f, country] = locales[i % locales.length]!;
  return {
    email: f.internet.email(),
    contact: { phone: phone(f, country) },
    payment: { card: f.finance.creditCardNumber({ issuer: f.helpers.arrayElement(['visa', 'mastercard', 'amex', 'discover', 'jcb']) }), iban: f.finance.iban({ formatted: f.datatype.boolean() }) },
    ssn: ssn(f), nino: nino(f), nir: nir(f),
    session: { ip: f.datatype.boolean() ? f.internet.ipv4() : f.internet.ipv6() },
    dateOfBirth: f.date.birthdate().toISOString().slice(0, 10),
    fullName: f.person.fullName(),
    contacts: [{ name: f.person.fullName(), email: f.internet.email() }, { name: `${f.person.firstName()} ${f.person.lastName()}`, email: f.internet.email() }],
    items: [{ name: f.commerce.productName(), sku: `SKU-${digits(f, 5)}` }, { name: f.commerce.productName(), sku: `SKU-${digits(f, 5)}` }],
    invoiceNumber: luhnInvalid(f), orderId: `ORD-${f.number.int({ min: 2020, max: 2026 })}-${digits(f, 6)}`, uuid: f.string.uuid(),
    version: f.system.semver(), createdAt: f.date.past().toISOString(), productName: f.commerce.productName(), city: f.location.city(),
    username: f.internet.username(), trackingNumber: digits(f, 9), account: `GB${digits(f, 2)}WEST${digits(f, 14)}`, amount: f.number.int({ min: 1, max: 99999 }),
  };
}

/** each labelled field's values, in document order */
function valuesAt(r: unknown, path: string): string[] {
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

const corpus = Array.from({ length: N }, (_, i) => record(i));

// precision and recall per detector, value by value, each value judged in its field's context
const counts = new Map<Kind, { tp: number; fp: number; fn: number }>(KINDS.map((k) => [k, { tp: 0, fp: 0, fn: 0 }]));
for (const r of corpus) {
  for (const [path, label] of Object.entries(LABELS)) {
    const context = { name: normaliseName(path.split('.').at(-1)!.replace('[]', '')), personalNeighbours: path.startsWith('contacts[]') };
    for (const value of valuesAt(r, path)) {
      for (const kind of KINDS) {
        const hit = detect(kind, value, context);
        const c = counts.get(kind)!;
        if (hit && label === kind) c.tp++;
        else if (hit) c.fp++;
        else if (label === kind) c.fn++;
      }
    }
  }
}

// the whole run as `veil discover --file` does it: read the JSON lines, parse, profile
const dir = await mkdtemp(join(tmpdir(), 'veil-bench-discover-'));
const file = join(dir, 'records.jsonl');
await writeFile(file, `${corpus.map((r) => JSON.stringify(r)).join('\n')}\n`);
const bare = async () => {
  const t = performance.now();
  const lines = (await readFile(file, 'utf8')).split('\n').filter(Boolean);
  let keys = 0;
  for (const line of lines) keys += Object.keys(JSON.parse(line) as object).length;
  if (keys === 0) throw new Error('empty corpus');
  return performance.now() - t;
};
const profiled = async () => {
  const t = performance.now();
  const profiler = new Profiler();
  for (const line of (await readFile(file, 'utf8')).split('\n').filter(Boolean)) profiler.add(JSON.parse(line));
  return { ms: performance.now() - t, findings: profiler.findings() };
};
await bare();
await profiled();
const bareMs = await bare();
const { ms, findings } = await profiled();
await rm(dir, { recursive: true, force: true });

console.log(`veil bench:discover — Node ${process.version}, ${fmt(N)} generated records (${locales.length} locales, ${Object.values(LABELS).filter(Boolean).length} labelled personal-data fields, ${Object.values(LABELS).filter((l) => l === null).length} decoy fields)\n`);
console.log('detector        precision   recall    true pos   false pos   false neg');
let met = true;
for (const [kind, c] of counts) {
  const precision = c.tp / Math.max(1, c.tp + c.fp);
  const recall = c.tp / Math.max(1, c.tp + c.fn);
  if (precision < 0.95 || recall < 0.95) met = false;
  console.log(`${kind.padEnd(16)}${precision.toFixed(4).padEnd(12)}${recall.toFixed(4).padEnd(10)}${fmt(c.tp).padEnd(11)}${fmt(c.fp).padEnd(12)}${fmt(c.fn)}`);
}
const expected = Object.entries(LABELS).filter(([, k]) => k !== null).map(([p, k]) => `${p}:${k}`).sort();
const found = findings.map((f) => `${f.path}:${f.kind}`).sort();
const missed = expected.filter((e) => !found.includes(e));
const extra = found.filter((e) => !expected.includes(e));
console.log(`\nfields reported by the profiler (share ≥ 0.8): ${findings.length}; labelled fields missed: ${missed.length ? missed.join(', ') : 'none'}; decoys reported: ${extra.length ? extra.join(', ') : 'none'}`);
console.log(`profiling ${fmt(N)} records from a JSON-lines file: ${fmt(Math.round(ms))} ms; the bare read and JSON.parse of the same file: ${fmt(Math.round(bareMs))} ms; ${ratio(ms, bareMs)} the baseline`);
console.log(`\ntarget: every detector precision ≥ 0.95 and recall ≥ 0.95 — ${met && missed.length === 0 && extra.length === 0 ? 'met' : 'NOT met'}; 10,000 records in under 10 s — ${ms < 10_000 * (N / 10_000) ? 'met' : 'NOT met'}`);
