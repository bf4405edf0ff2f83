import avro from 'avsc';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { type Chain } from '../../../src/engine/index.ts';
import { arrayOf, avroField, avroRecord, mapOf, nullable } from '../../helpers/avro-schema.ts';
import { chainFrom } from '../../helpers/chain-from.ts';
import { confluentFrame } from '../../helpers/confluent-frame.ts';
import { mappings } from '../../../src/stream/serde/field-mappings.ts';
import { avscSchema } from '../../../src/stream/serde/avro/avro-clean-schema.ts';
import { avroSerde } from '../../../src/stream/serde/avro/avro-serde.ts';
import { avroType } from '../../../src/stream/serde/avro/avro-types.ts';
import { guardFor } from '../../../src/stream/serde/decoded-drift-guard.ts';
import { protobufSerde } from '../../../src/stream/serde/protobuf/protobuf-serde.ts';
import { readFraming } from '../../../src/stream/serde/protobuf/protobuf-wire.ts';
import type { GuardPlan, RecordProtection, Serde } from '../../../src/stream/serde/serde.ts';
import { StreamError } from '../../../src/stream/stream-error.ts';
import { FakeRegistry } from './fake-registry.ts';

const tok = (label: string) => chainFrom((v: string) => `${label}(${v})`);
const guardPlan = (action: GuardPlan['action'], protect: Record<string, Chain> = {}, allow: string[] = []): GuardPlan => ({
  action,
  allow,
  protect: new Map(Object.entries(protect)),
  retypes: false,
});
const protection = (paths: string[], guard?: GuardPlan): RecordProtection => ({
  maps: mappings(
    paths,
    paths.map(() => tok('tok')),
  ),
  missing: 'pass',
  ...(guard ? { guard } : {}),
});

async function outcome(p: Promise<Buffer>): Promise<Buffer | StreamError> {
  return p.catch((e: unknown) => {
    expect(e).toBeInstanceOf(StreamError);
    return e as StreamError;
  });
}

const finding = (r: Buffer | StreamError) => (r instanceof StreamError ? [r.code, r.path, r.kind] : 'clean');
/** each record's outcome, protected in one batch for the clean topic */
const findings = async (serde: Serde, records: Buffer[], p: RecordProtection) =>
  (
    await serde.protectMany!(
      records,
      p,
      records.map(() => 'clean'),
    )
  ).map(finding);

describe('the unmapped guard on Avro records', () => {
  const schema = avroRecord(
    'Customer',
    {
      email: 'string',
      backupEmail: nullable('string'),
      cardNumber: nullable('long'),
      contacts: avroField(arrayOf(avroRecord('Contact', { email: 'string', note: 'string' })), { default: [] }),
      attributes: avroField(mapOf('string'), { default: {} }),
      note: avroField('string', { default: '' }),
    },
    'shop',
  );
  const type = avro.Type.forSchema(schema as avro.Schema);
  const wire = (id: number, value: object) =>
    confluentFrame(
      id,
      type.toBuffer({ email: 'ann@example.com', backupEmail: null, cardNumber: null, contacts: [], attributes: {}, note: 'call after 5pm', ...value }),
    );
  const setup = () => {
    const registry = new FakeRegistry();
    return { registry, id: registry.add(schema), serde: avroSerde({ registry, protectedPaths: ['email'] }) };
  };

  it('dead-letters personal data at a path no mapping names, naming the path and kind, never the value; mapped fields and free text pass', async () => {
    const { id, serde } = setup();
    const p = protection(['email'], guardPlan('dead-letter'));
    const records = [
      wire(id, {}),
      wire(id, { backupEmail: 'bob.backup@example.com' }),
      wire(id, { cardNumber: 4111111111111111 }),
      wire(id, { contacts: [{ email: 'eve@example.com', note: 'x' }] }),
      wire(id, { attributes: { owner: 'carol@example.com' } }),
      wire(id, { attributes: { 'dave@example.com': 'x' } }),
    ];
    const fields: (string | undefined)[] = [];
    const out = await serde.protectMany!(
      records,
      p,
      records.map(() => 'clean'),
      fields,
    );
    expect(out.map(finding)).toEqual([
      'clean',
      ['UNMAPPED_PERSONAL_DATA', 'backupEmail', 'email'],
      ['UNMAPPED_PERSONAL_DATA', 'cardNumber', 'payment-card'],
      ['UNMAPPED_PERSONAL_DATA', 'contacts[].email', 'email'],
      // a map is the array of its {key, value} entries
      ['UNMAPPED_PERSONAL_DATA', 'attributes[].value', 'email'],
      ['UNMAPPED_PERSONAL_DATA', 'attributes[].key', 'email'],
    ]);
    expect(fields[0]).toBe('email');
    // veil.protected.fields names what was protected in that record: a mapped path without a value is not named
    const some: (string | undefined)[] = [];
    await serde.protectMany!([wire(id, { contacts: [] })], protection(['email', 'backupEmail'], guardPlan('dead-letter')), ['clean'], some);
    expect(some[0]).toBe('email');
    for (const r of out) if (r instanceof StreamError) expect(r.message).not.toMatch(/@example|4111/);
    // protect gives the same outcome, record by record
    expect(finding(await outcome(serde.protect(records[1]!, p, 'clean')))).toEqual(['UNMAPPED_PERSONAL_DATA', 'backupEmail', 'email']);
  });

  it('action protect: a string of a protected kind is protected in place and named in the protected paths; a number, or a kind not protected, is dead-lettered', async () => {
    const { registry, id, serde } = setup();
    const p = protection(['email'], guardPlan('protect', { email: tok('guard'), 'payment-card': tok('card') }));
    const fields: (string | undefined)[] = [];
    const records = [
      wire(id, { backupEmail: 'bob.backup@example.com', contacts: [{ email: 'eve@example.com', note: 'x' }] }),
      wire(id, { cardNumber: 4111111111111111 }),
      wire(id, { note: 'GB82WEST12345698765432' }),
    ];
    const out = await serde.protectMany!(
      records,
      p,
      records.map(() => 'clean'),
      fields,
    );
    expect(out.slice(1).map(finding)).toEqual([
      ['UNMAPPED_PERSONAL_DATA', 'cardNumber', 'payment-card'],
      ['UNMAPPED_PERSONAL_DATA', 'note', 'iban'],
    ]);
    const clean = out[0] as Buffer;
    const cleanType = avroType(avscSchema(registry.schemas.get(clean.readUInt32BE(1))!));
    expect(cleanType.fromBuffer(clean.subarray(5))).toMatchObject({
      email: 'tok(ann@example.com)',
      backupEmail: 'guard(bob.backup@example.com)',
      contacts: [{ email: 'guard(eve@example.com)', note: 'x' }],
    });
    expect(fields[0]).toBe('email,backupEmail,contacts[].email');
  });

  it('a map key names its value: national phones under `mobile`, names under `fullName`, addresses under `address`, a Maestro 6304 under `pan`', async () => {
    const { id, serde } = setup();
    const p = protection(['email'], guardPlan('dead-letter'));
    const records = [
      wire(id, { attributes: { mobile: '07911 123456' } }),
      wire(id, { attributes: { fullName: 'Ann Lee' } }),
      wire(id, { attributes: { address: '10 Downing Street, London' } }),
      wire(id, { attributes: { pan: '6304000000000000' } }),
      wire(id, { attributes: { colour: 'blue', size: '07911 123456', hotelId: '07911123456' } }),
    ];
    expect(await findings(serde, records, p)).toEqual([
      ['UNMAPPED_PERSONAL_DATA', 'attributes[].value', 'phone'],
      ['UNMAPPED_PERSONAL_DATA', 'attributes[].value', 'person-name'],
      ['UNMAPPED_PERSONAL_DATA', 'attributes[].value', 'postal-address'],
      ['UNMAPPED_PERSONAL_DATA', 'attributes[].value', 'payment-card'],
      'clean',
    ]);
  });

  it('allowed paths are not looked at; unmapped: pass (no guard) checks nothing; the guard is built once per protection', async () => {
    const { id, serde } = setup();
    const allowed = protection(['email'], guardPlan('dead-letter', {}, ['backupEmail', 'attributes']));
    const records = [wire(id, { backupEmail: 'bob.backup@example.com', attributes: { owner: 'carol@example.com' } })];
    expect(await findings(serde, records, allowed)).toEqual(['clean']);
    expect(await findings(serde, [wire(id, { cardNumber: 4111111111111111 })], protection(['email']))).toEqual(['clean']);
    expect(guardFor(allowed)).toBe(guardFor(allowed));
    expect(guardFor(protection(['email']))).toBeUndefined();
  });
});

describe('the unmapped guard on Protobuf records', () => {
  const PROTO = `syntax = "proto3";
package shop;
message Customer {
  string email = 1;
  string backup_email = 2;
  fixed64 card = 3;
  repeated Contact contacts = 4;
  map<string, string> attributes = 5;
  map<string, Contact> by_name = 6;
  string note = 7;
  bytes blob = 8;
  repeated int64 numbers = 9;
  sint64 signed = 10;
}
message Contact { string email = 1; string label = 2; }
`;
  const Customer = protobuf.parse(PROTO, { keepCase: true }).root.lookupType('shop.Customer');
  const wire = (id: number, value: object) => {
    return confluentFrame(id, Buffer.from([0]), Customer.encode(Customer.fromObject({ email: 'ann@example.com', note: 'call after 5pm', ...value })).finish());
  };
  const setup = () => {
    const registry = new FakeRegistry();
    return { registry, id: registry.add(PROTO), serde: protobufSerde({ registry, protectedPaths: ['email'] }) };
  };

  it('dead-letters personal data at any unmapped path (numbers as their text, bytes as their UTF-8 text, nested, repeated, map keys and values), whatever the action', async () => {
    const { id, serde } = setup();
    const records = [
      wire(id, { blob: Buffer.from('zoe@example.com') }),
      wire(id, { backup_email: 'bob.backup@example.com' }),
      wire(id, { card: '4111111111111111' }),
      wire(id, { contacts: [{ email: 'eve@example.com', label: 'x' }] }),
      wire(id, { attributes: { owner: 'carol@example.com' } }),
      wire(id, { attributes: { 'dave@example.com': 'x' } }),
      wire(id, { by_name: { ann: { email: 'frank@example.com' } } }),
    ];
    for (const action of ['dead-letter', 'protect'] as const) {
      const p = protection(['email'], guardPlan(action, { email: tok('guard'), 'payment-card': tok('card') }));
      const out = await serde.protectMany!(
        records,
        p,
        records.map(() => 'clean'),
      );
      expect(out.map(finding), action).toEqual([
        ['UNMAPPED_PERSONAL_DATA', 'blob', 'email'],
        ['UNMAPPED_PERSONAL_DATA', 'backup_email', 'email'],
        ['UNMAPPED_PERSONAL_DATA', 'card', 'payment-card'],
        ['UNMAPPED_PERSONAL_DATA', 'contacts[].email', 'email'],
        ['UNMAPPED_PERSONAL_DATA', 'attributes[].value', 'email'],
        ['UNMAPPED_PERSONAL_DATA', 'attributes[].key', 'email'],
        ['UNMAPPED_PERSONAL_DATA', 'by_name[].value.email', 'email'],
      ]);
      for (const r of out) if (r instanceof StreamError) expect(r.message).not.toMatch(/@example|4111/);
      expect(finding(await outcome(serde.protect(records[2]!, p, 'clean')))).toEqual(['UNMAPPED_PERSONAL_DATA', 'card', 'payment-card']);
    }
    // bytes that are not UTF-8 text (an image, a hash) are not text to look at; the clean record protects the mapped field
    const binary = wire(id, { blob: Buffer.from([0xff, 0xfe, 0x40, 0x41, 0x42, 0x43, 0x44, 0x45]) });
    const [clean] = await serde.protectMany!([binary], protection(['email'], guardPlan('dead-letter')), ['clean']);
    expect(readFraming(clean as Buffer).indexes).toEqual([0]);
  });

  it("looks at fields the schema does not declare (a newer writer's, under an older schema id): text, nested messages, integers", async () => {
    const { id, serde } = setup();
    const p = protection(['email'], guardPlan('dead-letter'));
    const len = (n: number, body: Buffer) => Buffer.concat([Buffer.from([(n << 3) | 2]), Buffer.from([body.length]), body]);
    const varint = (n: number, v: bigint) => {
      const out = [(n << 3) | 0];
      for (let x = v; ; x >>= 7n) {
        if (x < 0x80n) {
          out.push(Number(x));
          break;
        }
        out.push(Number(x & 0x7fn) | 0x80);
      }
      return Buffer.from(out);
    };
    const records = [
      Buffer.concat([wire(id, {}), len(11, Buffer.from('backup.ann@example.com'))]),
      Buffer.concat([wire(id, {}), len(12, len(1, Buffer.from('nested.ann@example.com')))]),
      Buffer.concat([wire(id, {}), len(13, Buffer.from('4111 1111 1111 1111'))]),
      Buffer.concat([wire(id, {}), len(4, Buffer.concat([len(1, Buffer.from('x')), len(9, Buffer.from('deep.ann@example.com'))]))]),
      Buffer.concat([wire(id, {}), varint(14, 4111111111111111n), len(15, Buffer.from('just some words')), len(11, Buffer.from([0xff, 0xfe, 0x00]))]),
    ];
    expect(await findings(serde, records, p)).toEqual([
      ['UNMAPPED_PERSONAL_DATA', '#11', 'email'],
      ['UNMAPPED_PERSONAL_DATA', '#12', 'email'],
      ['UNMAPPED_PERSONAL_DATA', '#13', 'payment-card'],
      ['UNMAPPED_PERSONAL_DATA', 'contacts[].#9', 'email'],
      // a bare card's digits in a field without a name are possible, below the default threshold
      'clean',
    ]);
    const possible = protection(['email'], { ...guardPlan('dead-letter'), threshold: 3 });
    expect(await findings(serde, records.slice(4), possible)).toEqual([['UNMAPPED_PERSONAL_DATA', '#14', 'payment-card']]);
  });

  it("a map entry's key names its value; the key itself is data (checked without a name)", async () => {
    const { id, serde } = setup();
    const p = protection(['email'], guardPlan('dead-letter'));
    const records = [
      wire(id, { attributes: { mobile: '07911 123456' } }),
      wire(id, { attributes: { fullName: 'Ann Lee' } }),
      wire(id, { attributes: { hotelId: '07911123456', size: '07911 123456' } }),
      wire(id, { attributes: { '4111 1111 1111 1111': 'x' } }),
      wire(id, { blob: Buffer.from('+44 20 7946 0958') }),
    ];
    expect(await findings(serde, records, p)).toEqual([
      ['UNMAPPED_PERSONAL_DATA', 'attributes[].value', 'phone'],
      ['UNMAPPED_PERSONAL_DATA', 'attributes[].value', 'person-name'],
      'clean',
      ['UNMAPPED_PERSONAL_DATA', 'attributes[].key', 'payment-card'],
      ['UNMAPPED_PERSONAL_DATA', 'blob', 'phone'],
    ]);
  });

  it('reads integers on the wire: packed int64, zigzag sint64; every occurrence of a field, not only the last one a parser keeps', async () => {
    const { id, serde } = setup();
    // threshold possible: bare card digits in fields named neither card nor id are findings
    const p = protection(['email'], { ...guardPlan('dead-letter'), threshold: 3 });
    const both = (first: object, second: object) => {
      const framed = wire(id, first);
      return Buffer.concat([framed, Customer.encode(Customer.fromObject(second)).finish()]);
    };
    const records = [
      wire(id, { numbers: [1, 22, '4111111111111111'] }),
      wire(id, { signed: '5500000000000004' }),
      both({ backup_email: 'gil@example.com' }, { backup_email: 'not an address' }),
      wire(id, { numbers: [1, 123456789, 99999], signed: '-5' }),
    ];
    expect(await findings(serde, records, p)).toEqual([
      ['UNMAPPED_PERSONAL_DATA', 'numbers[]', 'payment-card'],
      ['UNMAPPED_PERSONAL_DATA', 'signed', 'payment-card'],
      ['UNMAPPED_PERSONAL_DATA', 'backup_email', 'email'],
      'clean',
    ]);
  });

  it('allowed paths and unmapped: pass let the values through', async () => {
    const { id, serde } = setup();
    const records = [wire(id, { backup_email: 'bob.backup@example.com', attributes: { owner: 'carol@example.com' } })];
    expect(await findings(serde, records, protection(['email'], guardPlan('dead-letter', {}, ['backup_email', 'attributes'])))).toEqual(['clean']);
    expect(await findings(serde, records, protection(['email']))).toEqual(['clean']);
    // Protobuf field names match exactly: an allowed path in another case is not this field
    expect(await findings(serde, records, protection(['email'], guardPlan('dead-letter', {}, ['backupEmail', 'attributes'])))).toEqual([
      ['UNMAPPED_PERSONAL_DATA', 'backup_email', 'email'],
    ]);
  });
});
