import protobuf from 'protobufjs';
import { REGISTRY_URL } from '../../helpers/kafka.ts';
import { formatCrashSuite } from '../../helpers/format-crash.ts';

const PROTO = 'syntax = "proto3";\npackage veil.crash;\nmessage Rec { int64 id = 1; string email = 2; int64 seq = 3; }\n';
const Rec = protobuf.parse(PROTO, { keepCase: true }).root.lookupType('veil.crash.Rec');
/** magic 0, id, then the message-index list [0] written as a lone 0 (Confluent's short form) */
const HEADER = 6;

formatCrashSuite({
  format: 'protobuf',
  // email is a string already: the clean schema is the raw text, which the registry dedupes to the raw id
  cleanIsRaw: true,
  async register(subject) {
    const res = await fetch(`${REGISTRY_URL}/subjects/${subject}/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schemaType: 'PROTOBUF', schema: PROTO }),
    });
    return ((await res.json()) as { id: number }).id;
  },
  encode(rawId, record) {
    const header = Buffer.alloc(HEADER);
    header.writeUInt32BE(rawId, 1);
    return Buffer.concat([header, Rec.encode(Rec.fromObject(record)).finish()]);
  },
  idOf: (value) => decode(value).id,
  decode: async (value) => decode(value),
});

function decode(value: Buffer): { id: number; email: string; seq: number } {
  return Rec.toObject(Rec.decode(value.subarray(HEADER)), { longs: Number, defaults: true }) as { id: number; email: string; seq: number };
}
