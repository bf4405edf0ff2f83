import { REGISTRY_URL } from '../../helpers/kafka.ts';
import { formatCrashSuite } from '../../helpers/format-crash.ts';

const schema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  properties: { id: { type: 'integer' }, email: { type: 'string', format: 'email' }, seq: { type: 'integer' } },
  required: ['id', 'email'],
};
const HEADER = 5;
const decode = (value: Buffer) => JSON.parse(value.subarray(HEADER).toString()) as { id: number; email: string; seq: number };

/** The format crash suite for json-schema, with every raw record validated (validate: true). */
formatCrashSuite({
  format: 'json-schema',
  extraYaml: '    validate: true',
  async register(subject) {
    const res = await fetch(`${REGISTRY_URL}/subjects/${subject}/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schemaType: 'JSON', schema: JSON.stringify(schema) }),
    });
    return ((await res.json()) as { id: number }).id;
  },
  encode(rawId, record) {
    const header = Buffer.alloc(HEADER);
    header.writeUInt32BE(rawId, 1);
    return Buffer.concat([header, Buffer.from(JSON.stringify(record))]);
  },
  idOf: (value) => decode(value).id,
  decode: async (value) => decode(value),
});
