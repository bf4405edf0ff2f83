import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import { openStream, type StreamService } from '../../src/app/open-stream.ts';
import { BROKERS, createTopics, REGISTRY_URL } from './kafka.ts';
import { EXAMPLE_CONFIG } from '../../src/env/index.ts';
import type { PipelineConfig } from '../../src/stream/config/index.ts';
import { requireConfig } from '../../src/app/config-file.ts';
import { Engine } from '../../src/engine/index.ts';
import { LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { resolveMasterKey } from '../../src/keystore/master-key.ts';

export const STREAM_MASTER = { VEIL_MASTER_KEY: 'c'.repeat(64) };
const MASTER = STREAM_MASTER;

/** The example configuration plus a `customers` pipeline over the given topics. */
export function pipelineYaml(t: { raw: string; clean: string; dlq: string; id: string }, format: PipelineConfig['format'], extra = ''): string {
  return `${readFileSync(EXAMPLE_CONFIG, 'utf8')}
pipelines:
  customers:
    source: { topics: [${t.raw}] }
    sink: { topic: ${t.clean} }
    deadLetterTopic: ${t.dlq}
    format: ${format}
    groupId: veil-test-${t.id}
    fields:
      - { path: email, field: Customer.email }
      - { path: 'cards[].number', field: Customer.cardNumber }
      - { path: profile.name, field: Customer.name }
    key: { field: Customer.email }
    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }
${extra}`;
}

/** An engine on the same config and keystore, to unprotect what the pipeline wrote. */
export async function unprotector(configFile: string, dataDir: string): Promise<(field: string, value: string) => string> {
  const { config } = await requireConfig(configFile);
  const master = await resolveMasterKey({ dataDir, env: MASTER });
  const engine = new Engine({ config: config.engine, keys: await LocalKeystore.open({ dataDir, masterKey: master.key }) });
  return (field, value) => {
    const [className, propertyName] = field.split('.') as [string, string];
    const { transforms } = engine.bind({
      identity: { roles: ['fraud'] },
      rightsEvidences: [{ name: 'Role', value: 'fraud' }],
      processingEvidences: [{ name: 'Action', value: 'Unprotect' }],
      fields: [{ className, propertyName }],
    });
    return transforms[0]!(value);
  };
}

/**
 * A running `customers` pipeline of `format` over fresh topics (`partitions` each, default 2),
 * with its own data dir, against the test broker and registry; `close` stops it and removes the
 * data dir.
 */
export async function startedPipeline(
  kafka: Kafka,
  t: { raw: string; clean: string; dlq: string; id: string },
  format: PipelineConfig['format'],
  extra = '',
  partitions = 2,
): Promise<{ dataDir: string; configFile: string; stream: StreamService; close(): Promise<void> }> {
  const dataDir = await mkdtemp(join(tmpdir(), `veil-${format}-`));
  const configFile = join(dataDir, 'config.yaml');
  await writeFile(configFile, pipelineYaml(t, format, extra));
  await createTopics(kafka, [t.raw, t.clean, t.dlq], partitions);
  const stream = await openStream({ configFile, dataDir, env: MASTER, now: () => new Date(), brokers: BROKERS, registryUrl: REGISTRY_URL, development: true });
  await stream.start();
  return {
    dataDir,
    configFile,
    stream,
    async close() {
      await stream.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
