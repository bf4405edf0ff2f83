import type { SchemaRegistryPort } from '../registry/index.ts';
import type { RecordFormat } from '../../discover/index.ts';

/**
 * How `veil discover --topic` reads a sampled value: JSON text, or a Confluent wire format through
 * the schema registry (Avro, JSON Schema, Protobuf: the pipelines' formats) — each decoded as the
 * pipeline's serde decodes it, with no field protected.
 */
export async function sampleReader(format: RecordFormat, registry: () => SchemaRegistryPort): Promise<(bytes: Buffer) => Promise<unknown>> {
  if (format === 'json') return async (bytes) => JSON.parse(bytes.toString('utf8')) as unknown;
  if (format === 'json-schema') {
    return async (bytes) => {
      if (bytes.length < 5 || bytes[0] !== 0) throw new RangeError('not in the wire format');
      return JSON.parse(bytes.subarray(5).toString('utf8')) as unknown;
    };
  }
  const formats = await import('./schema-formats.ts');
  if (format === 'protobuf') {
    const serde = formats.protobufSerde({ registry: registry(), protectedPaths: [] });
    return (bytes) => serde.decode(bytes);
  }
  const serde = formats.avroSerde({ registry: registry(), protectedPaths: [] });
  return async (bytes) => (await serde.decode(bytes)).value;
}
