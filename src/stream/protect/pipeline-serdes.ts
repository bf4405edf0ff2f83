import { VeilError } from '../../engine/index.ts';
import type { PipelineConfig } from './pipeline-config.ts';
import type { SchemaRegistryPort } from '../registry/registry-port.ts';
import { jsonSerde } from '../serde/json-serde.ts';
import type { Serde } from '../serde/serde.ts';

/**
 * The serde of a pipeline's format. Avro, JSON Schema and Protobuf support (registry client, avsc, protobufjs) load only
 * when a pipeline uses them; one registry client (cached, retrying) per caller is shared by its pipelines.
 */
export function serdes(registryUrl: string | undefined): (p: PipelineConfig) => Promise<Serde> {
  let registry: SchemaRegistryPort | undefined;
  return async (p) => {
    if (p.format === 'json') return jsonSerde();
    if (!registryUrl) throw new VeilError('CONFIG_INVALID', `a ${p.format} pipeline needs a schema registry: set SCHEMA_REGISTRY_URL or --registry`);
    const [{ confluentRegistry }, { CachingRegistry }, { RetryingRegistry }] = await Promise.all([
      import('../registry/confluent-registry.ts'), import('../registry/caching-registry.ts'), import('../registry/retrying-registry.ts'),
    ]);
    registry ??= new CachingRegistry(new RetryingRegistry(confluentRegistry(registryUrl)));
    const protectedPaths = p.fields.map((f) => f.path);
    // the Confluent schema tags the pipeline maps: their fields are protected too, per schema version
    const tags = Object.keys(p.tags ?? {});
    if (p.format === 'json-schema') return (await import('../serde/json-schema-serde.ts')).jsonSchemaSerde({ registry, protectedPaths, tags, foldKeys: p.keys !== 'exact' });
    if (p.format === 'protobuf') return (await import('../serde/protobuf-serde.ts')).protobufSerde({ registry, protectedPaths, tags });
    return (await import('../serde/avro-serde.ts')).avroSerde({ registry, protectedPaths, tags });
  };
}
