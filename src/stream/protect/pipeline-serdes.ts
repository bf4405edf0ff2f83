import { VeilError } from '../../engine/index.ts';
import type { PipelineConfig } from '../config/index.ts';
import type { RegistrySettings, SchemaRegistryPort } from '../registry/index.ts';
import { jsonSerde, schemaFormats, type Serde } from '../serde/index.ts';

/**
 * The serde of a pipeline's format. Avro, JSON Schema and Protobuf support (registry client, avsc, protobufjs) load only
 * when a pipeline uses them; one registry client (cached, retrying) per caller is shared by its pipelines.
 * `registry`: its settings (registry-settings.ts: the URL, authentication, TLS), or none.
 */
export function serdes(settings: RegistrySettings | undefined): (p: PipelineConfig) => Promise<Serde> {
  let registry: SchemaRegistryPort | undefined;
  return async (p) => {
    if (p.format === 'json') return jsonSerde();
    if (!settings) throw new VeilError('CONFIG_INVALID', `a ${p.format} pipeline needs a schema registry: set SCHEMA_REGISTRY_URL or --registry`);
    const [{ confluentRegistry, CachingRegistry, RetryingRegistry }, formats] = await Promise.all([import('../registry/index.ts'), schemaFormats()]);
    registry ??= new CachingRegistry(new RetryingRegistry(confluentRegistry(settings)));
    const protectedPaths = p.fields.map((f) => f.path);
    // the Confluent schema tags the pipeline maps: their fields are protected too, per schema version
    const tags = Object.keys(p.tags ?? {});
    if (p.format === 'json-schema') return formats.jsonSchemaSerde({ registry, protectedPaths, tags, foldKeys: p.keys !== 'exact' });
    if (p.format === 'protobuf') return formats.protobufSerde({ registry, protectedPaths, tags });
    return formats.avroSerde({ registry, protectedPaths, tags });
  };
}
