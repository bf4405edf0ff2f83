/**
 * Avro schemas for tests, built so that each test states only its fields:
 *
 *   avroRecord('Customer', { id: 'long', address: nullable(avroRecord('Address', { city: 'string' })) }, 'acme')
 *
 * gives the literal a registry and avsc read: `{ type: 'record', name, namespace, fields: [{ name, type }, …] }`,
 * a field's attributes (default, doc, confluent:tags) after its name and type, in the order given.
 */
export type AvroSchema = string | readonly AvroSchema[] | object;

const FIELD = Symbol('an Avro field with attributes');

interface FieldSpec {
  readonly [FIELD]: true;
  readonly type: AvroSchema;
  readonly attributes: Readonly<Record<string, unknown>>;
}

export interface AvroField {
  name: string;
  type: AvroSchema;
  [attribute: string]: unknown;
}

export interface AvroRecord {
  type: 'record';
  name: string;
  namespace?: string;
  fields: AvroField[];
}

/** a field's type with its attributes: avroField('string', { default: '', 'confluent:tags': ['PII'] }) */
export function avroField(type: AvroSchema, attributes: Record<string, unknown>): FieldSpec {
  return { [FIELD]: true, type, attributes };
}

/** the union ['null', type] with the default null */
export function nullable(type: AvroSchema, attributes: Record<string, unknown> = {}): FieldSpec {
  return avroField(['null', type], { default: null, ...attributes });
}

export const arrayOf = (items: AvroSchema) => ({ type: 'array', items });
export const mapOf = (values: AvroSchema) => ({ type: 'map', values });

function isFieldSpec(spec: AvroSchema | FieldSpec): spec is FieldSpec {
  return typeof spec === 'object' && spec !== null && FIELD in spec;
}

export function avroRecord(name: string, fields: Record<string, AvroSchema | FieldSpec>, namespace?: string): AvroRecord {
  return {
    type: 'record',
    name,
    ...(namespace === undefined ? {} : { namespace }),
    fields: Object.entries(fields).map(([fieldName, spec]) =>
      isFieldSpec(spec) ? { name: fieldName, type: spec.type, ...spec.attributes } : { name: fieldName, type: spec },
    ),
  };
}
