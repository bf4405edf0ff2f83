import { runPsql } from '../db/index.ts';
import type { RecordFormat } from '../discover/index.ts';
import { decodedSamples, sampleFile, sampleTable, type SampleReport, type Sampled } from '../discover/index.ts';
import { sampleTopic, type KafkaConnection } from '../kafka/index.ts';
import { CachingRegistry, confluentRegistry, type RegistrySettings } from '../stream/registry/index.ts';
import { sampleReader } from '../stream/serde/index.ts';

export type { SampleReport, Sampled } from '../discover/index.ts';

/**
 * The sources `veil discover` samples, put together: a JSON-lines file, a PostgreSQL table through
 * psql, a Kafka topic through src/kafka's sampler with its format's reader (src/stream's serdes,
 * the registry for the registry formats).
 */
export interface DiscoverSources {
  file(path: string, limit: number, each: (s: Sampled) => void): Promise<SampleReport>;
  table(databaseUrl: string, table: string, limit: number, each: (s: Sampled) => void): Promise<SampleReport>;
  topic(
    connection: KafkaConnection,
    topic: string,
    limit: number,
    each: (s: Sampled) => void,
    format: RecordFormat,
    registry?: RegistrySettings,
  ): Promise<SampleReport>;
}

export const discoverSources: DiscoverSources = {
  file: sampleFile,
  table: (databaseUrl, table, limit, each) => sampleTable((script) => runPsql(databaseUrl, script, { singleTransaction: false }), table, limit, each),
  async topic(connection, topic, limit, each, format, registry) {
    const read = await sampleReader(format, () => new CachingRegistry(confluentRegistry(registry!)));
    const samples = decodedSamples(read, each);
    await sampleTopic(connection, topic, limit, samples.take);
    return samples.report;
  },
};
