// The schema-registry formats of bench:stream: the bench's JSON record as Confluent-framed JSON
// Schema and as Protobuf, with the raw schema registered, so veil's protect of each format can be
// timed beside the bare copy of the same bytes.
import protobuf from 'protobufjs';

export type RegistryFormat = 'json-schema' | 'protobuf';

const JSON_SCHEMA = JSON.stringify({
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  properties: {
    id: { type: 'integer' },
    email: { type: 'string' },
    card: { type: 'string' },
    name: { type: 'string' },
    address: { type: 'object' },
    orders: { type: 'array' },
    preferences: { type: 'object' },
    padding: { type: 'string' },
  },
  required: ['id', 'email'],
});

const PROTO = `syntax = "proto3";
package veil.bench;
message Customer {
  int64 id = 1;
  string email = 2;
  string card = 3;
  string name = 4;
  Address address = 5;
  repeated Order orders = 6;
  Preferences preferences = 7;
  string padding = 8;
  message Address { string street = 1; string city = 2; string postcode = 3; string country = 4; }
  message Order { string sku = 1; int32 qty = 2; double price = 3; string note = 4; }
  message Preferences { bool newsletter = 1; string channel = 2; string locale = 3; repeated string tags = 4; }
}
`;
const Customer = protobuf.parse(PROTO, { keepCase: true }).root.lookupType('veil.bench.Customer');

/** Registers the format's raw schema under `subject`; returns an encoder of the bench's records. */
export async function registeredEncoder(registryUrl: string, format: RegistryFormat, subject: string): Promise<(record: object) => Buffer> {
  const res = await fetch(`${registryUrl}/subjects/${subject}/versions`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    body: JSON.stringify({ schemaType: format === 'protobuf' ? 'PROTOBUF' : 'JSON', schema: format === 'protobuf' ? PROTO : JSON_SCHEMA }),
  });
  if (!res.ok) throw new Error(`registering the bench schema failed: ${res.status}`);
  const { id } = (await res.json()) as { id: number };
  // protobuf: the message-index list [0] in its short form, a lone 0
  const header = Buffer.alloc(format === 'protobuf' ? 6 : 5);
  header.writeUInt32BE(id, 1);
  if (format === 'protobuf') return (record) => Buffer.concat([header, Customer.encode(Customer.fromObject(record)).finish()]);
  return (record) => Buffer.concat([header, Buffer.from(JSON.stringify(record))]);
}
