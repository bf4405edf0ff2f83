import protobuf from 'protobufjs';
import { iban, visa } from './drift-records.ts';
import { confluentFrame } from './confluent-frame.ts';

/**
 * Records a drifting producer writes through a schema registry (Protobuf and JSON Schema), each
 * case with its own writer's schema version, against pipelines that map `email`,
 * `cards[].number` and `profile.name` and the Confluent tag PII_ID. Every value sent as personal
 * data is unique per record and listed (as text, and for a Protobuf fixed64 also as its 8 bytes),
 * so a test can search a clean topic's bytes for it; each case says where veil must send it.
 */
export interface RegistryDriftCase {
  label: string;
  /** clean with these protected paths, or dead-lettered with this code, path and kind */
  expect: { clean: true; fields: string } | { clean: false; code: string; path: string; kind?: string };
  /** the writer's schema of this case's records */
  schema: string;
  record(id: number): { value: Record<string, unknown>; personal: string[]; binary?: Buffer[] };
}

export const PROTECTED_PB = 'email,cards[].number,profile.name,national_id';
export const PROTECTED_JS = 'email,cards[].number,profile.name,nationalId';

const email = (id: number, tag: string) => `${tag}.${id}@example.com`;
const name = (id: number) => `Ann Lee${String.fromCharCode(97 + (id % 26))}${String.fromCharCode(97 + (Math.floor(id / 26) % 26))}`;
const nino = (id: number) => `QQ${String(id).padStart(6, '0')}C`;
const le64 = (digits: string) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(digits));
  return b;
};

// ---- Protobuf ------------------------------------------------------------------------------------

/** the baseline .proto with `extra` fields in Customer and `profileExtra` in Profile */
const proto = (extra = '', profileExtra = '', email = 'string email = 2;') => `syntax = "proto3";
package drift;
import "confluent/meta.proto";

message Customer {
  int64 id = 1;
  ${email}
  repeated Card cards = 3;
  Profile profile = 4;
  string note = 5;
  string national_id = 6 [(confluent.field_meta).tags = "PII_ID"];
${extra}
  message Card {
    fixed64 number = 1;
    int32 exp_month = 2;
    string brand = 3;
  }
  message Profile {
    string name = 1;
    string tier = 2;
${profileExtra}
  }
}
${profileExtra.includes('Contact') ? 'message Contact { string email = 1; string label = 2; }\n' : ''}`;

/** the baseline Protobuf record's fields and personal values */
function pbBase(id: number, withEmail = true): { value: Record<string, unknown>; personal: string[]; binary: Buffer[] } {
  const e = email(id, 'pb');
  const card = visa(id);
  return {
    value: {
      id,
      ...(withEmail ? { email: e } : {}),
      cards: [{ number: card, exp_month: 12, brand: 'visa' }],
      profile: { name: name(id), tier: 'gold' },
      note: `please deliver after 5pm, order ${id} of 3 boxes`,
      national_id: nino(id),
    },
    personal: [...(withEmail ? [e] : []), card, name(id), nino(id)],
    binary: [le64(card)],
  };
}

export const PB_CASES: RegistryDriftCase[] = [
  {
    label: 'baseline: mapped fields and the PII_ID tag protected, free text kept',
    expect: { clean: true, fields: PROTECTED_PB },
    schema: proto(),
    record: (id) => pbBase(id),
  },
  {
    label: 'email renamed email_address (the mapping names a field the schema lacks)',
    expect: { clean: false, code: 'SCHEMA_PATH_UNKNOWN', path: 'email' },
    schema: proto('', '', 'string email_address = 2;'),
    record: (id) => {
      const r = pbBase(id, false);
      return { ...r, value: { ...r.value, email_address: email(id, 'renamed') }, personal: [...r.personal, email(id, 'renamed')] };
    },
  },
  {
    label: 'backup_email added',
    expect: { clean: false, code: 'UNMAPPED_PERSONAL_DATA', path: 'backup_email', kind: 'email' },
    schema: proto('  string backup_email = 7;'),
    record: (id) => {
      const r = pbBase(id);
      return { ...r, value: { ...r.value, backup_email: email(id, 'backup') }, personal: [...r.personal, email(id, 'backup')] };
    },
  },
  {
    label: 'card_number added as a fixed64',
    expect: { clean: false, code: 'UNMAPPED_PERSONAL_DATA', path: 'card_number', kind: 'payment-card' },
    schema: proto('  fixed64 card_number = 8;'),
    record: (id) => {
      const r = pbBase(id);
      const card = visa(id + 500_000);
      return { ...r, value: { ...r.value, card_number: card }, personal: [...r.personal, card], binary: [...r.binary, le64(card)] };
    },
  },
  {
    label: 'profile.contacts[].email nested',
    expect: { clean: false, code: 'UNMAPPED_PERSONAL_DATA', path: 'profile.contacts[].email', kind: 'email' },
    schema: proto('', '    repeated Contact contacts = 3;'),
    record: (id) => {
      const r = pbBase(id);
      return {
        ...r,
        value: { ...r.value, profile: { ...(r.value.profile as object), contacts: [{ email: email(id, 'nested'), label: 'home' }] } },
        personal: [...r.personal, email(id, 'nested')],
      };
    },
  },
  {
    label: 'an address in a map value',
    expect: { clean: false, code: 'UNMAPPED_PERSONAL_DATA', path: 'attributes[].value', kind: 'email' },
    schema: proto('  map<string, string> attributes = 9;'),
    record: (id) => {
      const r = pbBase(id);
      return { ...r, value: { ...r.value, attributes: { owner: email(id, 'map') } }, personal: [...r.personal, email(id, 'map')] };
    },
  },
  {
    label: 'ssn tagged PII_SSN, a tag the pipeline does not map',
    expect: { clean: false, code: 'UNMAPPED_PERSONAL_DATA', path: 'ssn', kind: 'tag:PII_SSN' },
    schema: proto('  string ssn = 10 [(confluent.field_meta) = { tags: ["PII_SSN"] }];'),
    record: (id) => {
      const r = pbBase(id);
      const ssn = `9${String(id).padStart(8, '0')}`;
      return { ...r, value: { ...r.value, ssn }, personal: [...r.personal, ssn] };
    },
  },
  {
    label: 'decoys and free text in added fields',
    expect: { clean: true, fields: PROTECTED_PB },
    schema: proto('  string order_id = 11;\n  string sku = 12;\n  string comment = 13;'),
    record: (id) => {
      const r = pbBase(id);
      return {
        ...r,
        value: { ...r.value, order_id: `ORD-2024-${String(id).padStart(6, '0')}`, sku: 'SKU-88231-XL', comment: 'left at the door, signed by the neighbour' },
      };
    },
  },
];

/** the typo pipeline's cases: every record of the baseline schema refused for the path the mapping misspells */
export const PB_TYPO: RegistryDriftCase = {
  label: 'cards[].expMonth mapped, the .proto says exp_month',
  expect: { clean: false, code: 'SCHEMA_PATH_UNKNOWN', path: 'cards[].expMonth' },
  schema: proto(),
  record: (id) => pbBase(id),
};

/** the Confluent framing of a Customer (message index [0]) of `schema` */
export function pbValue(schema: string, schemaId: number, value: Record<string, unknown>): Buffer {
  const type = protobuf.parse(schema, { keepCase: true }).root.lookupType('drift.Customer');
  return confluentFrame(schemaId, Buffer.from([0]), type.encode(type.fromObject(value)).finish());
}

/** the id (field 1, a varint, written first) of a framed Customer, raw or clean */
export function pbId(bytes: Buffer): number {
  // magic, schema id, the index list [0] as one byte, then field 1's tag
  if (bytes[5] !== 0 || bytes[6] !== 0x08) throw new Error('not a framed Customer with its id first');
  let v = 0;
  for (let pos = 7, s = 1; ; pos++, s *= 128) {
    v += (bytes[pos]! & 127) * s;
    if (bytes[pos]! < 128) return v;
  }
}

// ---- JSON Schema ----------------------------------------------------------------------------------

/** the baseline JSON Schema with `extra` properties (a JSON object's members) */
const jsonSchema = (extra: Record<string, unknown> = {}, profileExtra: Record<string, unknown> = {}, drop: string[] = []) => {
  const properties: Record<string, unknown> = {
    id: { type: 'integer' },
    email: { type: 'string' },
    cards: { type: 'array', items: { $ref: '#/$defs/Card' } },
    profile: { type: 'object', properties: { name: { type: 'string' }, tier: { type: 'string' }, ...profileExtra } },
    note: { type: 'string' },
    nationalId: { type: 'string', 'confluent:tags': ['PII_ID'] },
    ...extra,
  };
  for (const d of drop) delete properties[d];
  return JSON.stringify({
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'Customer',
    type: 'object',
    additionalProperties: true,
    properties,
    $defs: { Card: { type: 'object', properties: { number: { type: 'string' }, expMonth: { type: 'integer' }, brand: { type: 'string' } } } },
  });
};

function jsBase(id: number, withEmail = true): { value: Record<string, unknown>; personal: string[] } {
  const e = email(id, 'js');
  return {
    value: {
      id,
      ...(withEmail ? { email: e } : {}),
      cards: [{ number: visa(id), expMonth: 12, brand: 'visa' }],
      profile: { name: name(id), tier: 'gold' },
      note: `please deliver after 5pm, order ${id} of 3 boxes`,
      nationalId: nino(id),
    },
    personal: [...(withEmail ? [e] : []), visa(id), name(id), nino(id)],
  };
}

export const JS_CASES: RegistryDriftCase[] = [
  {
    label: 'baseline: mapped fields and the PII_ID tag protected, free text kept',
    expect: { clean: true, fields: PROTECTED_JS },
    schema: jsonSchema(),
    record: (id) => jsBase(id),
  },
  {
    label: 'email renamed emailAddress (the mapping names a property the schema does not declare)',
    expect: { clean: false, code: 'SCHEMA_PATH_UNKNOWN', path: 'email' },
    schema: jsonSchema({ emailAddress: { type: 'string' } }, {}, ['email']),
    record: (id) => {
      const r = jsBase(id, false);
      return { ...r, value: { ...r.value, emailAddress: email(id, 'renamed') }, personal: [...r.personal, email(id, 'renamed')] };
    },
  },
  {
    label: 'backupEmail added',
    expect: { clean: false, code: 'UNMAPPED_PERSONAL_DATA', path: 'backupEmail', kind: 'email' },
    schema: jsonSchema({ backupEmail: { type: 'string' } }),
    record: (id) => {
      const r = jsBase(id);
      return { ...r, value: { ...r.value, backupEmail: email(id, 'backup') }, personal: [...r.personal, email(id, 'backup')] };
    },
  },
  {
    label: 'cardNumber added as a JSON number',
    expect: { clean: false, code: 'UNMAPPED_PERSONAL_DATA', path: 'cardNumber', kind: 'payment-card' },
    schema: jsonSchema({ cardNumber: { type: 'integer' } }),
    record: (id) => {
      const r = jsBase(id);
      const card = visa(id + 700_000);
      return { ...r, value: { ...r.value, cardNumber: Number(card) }, personal: [...r.personal, card] };
    },
  },
  {
    label: 'profile.contacts[].email nested',
    expect: { clean: false, code: 'UNMAPPED_PERSONAL_DATA', path: 'profile.contacts[].email', kind: 'email' },
    schema: jsonSchema({}, { contacts: { type: 'array', items: { type: 'object', properties: { email: { type: 'string' } } } } }),
    record: (id) => {
      const r = jsBase(id);
      return {
        ...r,
        value: { ...r.value, profile: { ...(r.value.profile as object), contacts: [{ email: email(id, 'nested') }] } },
        personal: [...r.personal, email(id, 'nested')],
      };
    },
  },
  {
    label: 'an iban the schema does not declare (additionalProperties)',
    expect: { clean: false, code: 'UNMAPPED_PERSONAL_DATA', path: 'iban', kind: 'iban' },
    schema: jsonSchema(),
    record: (id) => {
      const r = jsBase(id);
      return { ...r, value: { ...r.value, iban: iban(id) }, personal: [...r.personal, iban(id)] };
    },
  },
  {
    label: 'ssn tagged PII_SSN, a tag the pipeline does not map',
    expect: { clean: false, code: 'UNMAPPED_PERSONAL_DATA', path: 'ssn', kind: 'tag:PII_SSN' },
    schema: jsonSchema({ ssn: { type: 'string', 'confluent:tags': ['PII_SSN'] } }),
    record: (id) => {
      const r = jsBase(id);
      const ssn = `9${String(id).padStart(8, '0')}`;
      return { ...r, value: { ...r.value, ssn }, personal: [...r.personal, ssn] };
    },
  },
  {
    label: 'decoys and free text in added properties',
    expect: { clean: true, fields: PROTECTED_JS },
    schema: jsonSchema({ orderId: { type: 'string' }, sku: { type: 'string' }, comment: { type: 'string' } }),
    record: (id) => {
      const r = jsBase(id);
      return {
        ...r,
        value: {
          ...r.value,
          orderId: `ORD-2024-${String(id).padStart(6, '0')}`,
          sku: 'SKU-88231-XL',
          comment: 'left at the door, signed by the neighbour',
          total: 1234.5,
        },
      };
    },
  },
];

export const JS_TYPO: RegistryDriftCase = {
  label: 'cards[].exp_month mapped, the schema says expMonth',
  expect: { clean: false, code: 'SCHEMA_PATH_UNKNOWN', path: 'cards[].exp_month' },
  schema: jsonSchema(),
  record: (id) => jsBase(id),
};

/** the Confluent framing of a JSON Schema record */
export function jsValue(schemaId: number, value: Record<string, unknown>): Buffer {
  return confluentFrame(schemaId, JSON.stringify(value));
}

export function jsId(bytes: Buffer): number {
  return (JSON.parse(bytes.subarray(5).toString('utf8')) as { id: number }).id;
}
