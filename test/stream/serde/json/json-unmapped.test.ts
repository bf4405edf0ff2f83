import { describe, expect, it } from 'vitest';
import { decoyRecord } from '../../../../bench/discover-corpus.ts';
import { chainFrom } from '../../../helpers/chain-from.ts';
import { mappings } from '../../../../src/stream/serde/field-mappings.ts';
import { protectJsonValues } from '../../../../src/stream/serde/json/json-splice.ts';
import type { GuardPlan, RecordProtection } from '../../../../src/stream/serde/serde.ts';
import { StreamError } from '../../../../src/stream/stream-error.ts';

const wrap = (s: string) => `<${s}>`;
const PATHS = ['email', 'cards[].number', 'profile.name'];

/** the shipped example pipeline's mapping, keys insensitive, with the guard as given */
function protection(guard: Partial<GuardPlan> | null = {}, foldKeys = true): RecordProtection {
  return {
    maps: mappings(
      PATHS,
      PATHS.map(() => chainFrom(wrap)),
    ),
    missing: 'pass',
    foldKeys,
    ...(guard ? { guard: { action: 'dead-letter', allow: [], protect: new Map(), retypes: true, ...guard } } : {}),
  };
}

function run(record: unknown, p = protection()): { out?: string; fields?: string; error?: StreamError } {
  const fields: (string | undefined)[] = [];
  const [out] = protectJsonValues([Buffer.from(typeof record === 'string' ? record : JSON.stringify(record))], p, fields);
  return out instanceof StreamError ? { error: out } : { out: out!.toString(), fields: fields[0]! };
}

const base = { email: 'ann@example.com', cards: [{ number: '4111 1111 1111 1111' }], profile: { name: 'Ann Lee' }, id: 7 };

describe('the unmapped guard over JSON records (the drift of issue 28, the example pipeline)', () => {
  it.each([
    ['renamed', { emailAddress: 'bob@example.com' }, 'emailAddress', 'email'],
    ['renamed card', { cardNumber: '5500 0000 0000 0004' }, 'cardNumber', 'payment-card'],
    ['moved', { contact: { email: 'bob@example.com' } }, 'contact.email', 'email'],
    ['moved card', { payment: { card: { number: '4012888888881881' } } }, 'payment.card.number', 'payment-card'],
    ['added', { backupEmail: 'bob@example.com' }, 'backupEmail', 'email'],
    ['added iban', { iban: 'GB82 WEST 1234 5698 7654 32' }, 'iban', 'iban'],
    ['a new nested list', { profile: { name: 'Ann Lee', contacts: [{ email: 'bob@example.com' }] } }, 'profile.contacts[].email', 'email'],
    ['an address as an object key', { byEmail: { 'bob@example.com': { since: 2020 } } }, 'byEmail.*', 'email'],
    ['a card as a JSON number', { cardNumber: 4111111111111111 }, 'cardNumber', 'payment-card'],
    ['a national id', { ssn: '123-45-6789' }, 'ssn', 'us-ssn'],
    ['a phone in a phone-named field', { mobile: '020 7946 0958' }, 'mobile', 'phone'],
    ['a person name in a name-hinted field', { lastName: 'Lovelace' }, 'lastName', 'person-name'],
  ])('%s: dead-lettered UNMAPPED_PERSONAL_DATA naming the path and kind, never the value', (_, extra, path, kind) => {
    const { error } = run({ ...base, ...extra });
    expect(error).toBeInstanceOf(StreamError);
    expect([error!.code, error!.path, error!.kind]).toEqual(['UNMAPPED_PERSONAL_DATA', path, kind]);
    expect(error!.message).toContain(path);
    for (const v of Object.values(extra)) expect(error!.message).not.toContain(JSON.stringify(v).replace(/^"|"$/g, ''));
  });

  it.each([
    'fullName',
    'first_name',
    'LASTNAME',
    'surname',
    'givenNames',
    'family-name',
    'forename',
    'middleName',
    'maidenName',
    'customerName',
    'clientName',
    'holderName',
    'cardHolder',
    'cardholderName',
    'accountHolder',
    'contactName',
    'patientName',
    'employeeName',
    'personName',
    'prenom',
    'prénom',
    'vorname',
    'nachname',
  ])('a person name in a field named %s is found (the key prefilter lets every such name through)', (field) => {
    const { error } = run({ ...base, [field]: 'Ada Lovelace' });
    expect([error?.code, error?.kind]).toEqual(['UNMAPPED_PERSONAL_DATA', 'person-name']);
  });

  it('an array element is named by its array: national phones in a phones list, names in a familyName list', () => {
    expect([run({ ...base, phones: ['020 7946 0958'] }).error?.path, run({ ...base, familyName: ['Lovelace', 'Byron'] }).error?.kind]).toEqual([
      'phones[]',
      'person-name',
    ]);
  });

  it('case variants reach the mapped paths (keys: insensitive) and are protected, not dead-lettered', () => {
    const { out, fields } = run({ Email: 'ann@example.com', cards: [{ Number: '4111111111111111' }], id: 1 });
    expect(JSON.parse(out!)).toEqual({ Email: '<ann@example.com>', cards: [{ Number: '<4111111111111111>' }], id: 1 });
    expect(fields).toBe('email,cards[].number');
  });

  it('keys: exact leaves a case variant unmapped, and the guard refuses it', () => {
    const { error } = run({ Email: 'ann@example.com' }, protection({}, false));
    expect([error!.code, error!.path, error!.kind]).toEqual(['UNMAPPED_PERSONAL_DATA', 'Email', 'email']);
  });

  it('veil.protected.fields names only the paths protected in that record', () => {
    expect(run({ email: 'ann@example.com', id: 1 }).fields).toBe('email');
    expect(run({ id: 1, note: 'hello' }).fields).toBe('');
    expect(run(base).fields).toBe('email,cards[].number,profile.name');
  });

  it('passes what is not personal data: free text, ids, amounts, decoys', () => {
    const decoys = {
      ...base,
      note: 'call me tomorrow about the order',
      orderId: 'ORD-2024-000123',
      uuid: '0f8fad5b-d9cb-469f-a165-70867728950e',
      sku: 'SKU-88231-XL',
      version: '10.2.33',
      postcode: 'SW1A 1AA',
      ts: '2024-03-01T10:00:00Z',
      amount: 1234567.89,
      luhnInvalid: '4111111111111112',
      epochMs: 1732680000000,
      count: 123456789012,
      flag: true,
      nothing: null,
    };
    const { out, error } = run(decoys);
    expect(error).toBeUndefined();
    expect(JSON.parse(out!).note).toBe(decoys.note);
  });

  it('dead-letters at most 0.1% of the decoy corpus of bench:discover (2,000 records of 14 decoy fields)', () => {
    const records = Array.from({ length: 2000 }, (_, i) => ({ ...base, ...decoyRecord(i) }));
    const refused = records.filter((r) => run(r).error !== undefined);
    expect(refused.length).toBeLessThanOrEqual(2);
  });

  it('an allowed path is not looked at, nor anything under it (matched with the keys rule)', () => {
    const record = { ...base, Audit: { by: 'ops@example.com' }, backupEmail: 'bob@example.com' };
    expect(run(record, protection({ allow: ['audit', 'backupEmail'] })).error).toBeUndefined();
    expect(run(record, protection({ allow: ['audit'] })).error!.path).toBe('backupEmail');
  });

  it('action protect: a kind the pipeline maps is protected in place and listed; another kind or a key is still refused', () => {
    const p = protection({ action: 'protect', protect: new Map([['email', chainFrom((s) => `E(${s})`)]]) });
    const { out, fields } = run({ ...base, contact: { email: 'bob@example.com' }, pan: 4111111111111111 }, p);
    expect(out).toBeUndefined();
    const ok = run({ ...base, contact: { email: 'bob@example.com' } }, p);
    expect(JSON.parse(ok.out!).contact.email).toBe('E(bob@example.com)');
    expect(ok.fields).toBe('email,cards[].number,profile.name,contact.email');
    expect(fields).toBeUndefined();
    expect(run({ byEmail: { 'bob@example.com': 1 } }, p).error!.code).toBe('UNMAPPED_PERSONAL_DATA');
  });

  it('action protect refuses a record with more findings than the guard collects (none may pass in clear)', () => {
    const p = protection({ action: 'protect', protect: new Map([['email', chainFrom((s) => `E(${s})`)]]) });
    const many = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`e${i}`, `u${i}@example.com`]));
    expect(run({ ...base, ...many }, p).error!.code).toBe('UNMAPPED_PERSONAL_DATA');
    const sixteen = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`e${i}`, `u${i}@example.com`]));
    const out = run({ ...sixteen }, p).out!;
    expect(out).not.toMatch(/"u\d+@example\.com"/);
  });

  it('action protect turns a number into a protected string only where no schema fixes the type (retypes: format json)', () => {
    const cards = new Map([['payment-card', chainFrom((s) => `C(${s})`)]]);
    expect(JSON.parse(run({ ...base, pan: 4111111111111111 }, protection({ action: 'protect', protect: cards })).out!).pan).toBe('C(4111111111111111)');
    const schema = run({ ...base, pan: 4111111111111111 }, protection({ action: 'protect', protect: cards, retypes: false }));
    expect([schema.error!.code, schema.error!.path]).toEqual(['UNMAPPED_PERSONAL_DATA', 'pan']);
    expect(JSON.parse(run({ ...base, card: '4111111111111111' }, protection({ action: 'protect', protect: cards, retypes: false })).out!).card).toBe(
      'C(4111111111111111)',
    );
  });

  it('a number keeps its bytes unless it is card-shaped; duplicate and escaped keys are found', () => {
    expect(run('{"email":"a@example.com","n":1e400,"big":18446744073709551615}').out).toBe('{"email":"<a@example.com>","n":1e400,"big":18446744073709551615}');
    expect(run('{"x":"a@example.com","x":"b"}').error!.path).toBe('x');
    expect(run('{"\\u0065mail2":"a@example.com"}').error!.path).toBe('email2');
  });

  it('without the guard (unmapped: pass) nothing unmapped is looked at', () => {
    expect(run({ backupEmail: 'bob@example.com' }, protection(null)).error).toBeUndefined();
  });
});
