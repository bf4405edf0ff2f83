import pino from 'pino';
import type { VeilConfig } from '../../src/app/config-file.ts';
import { Engine } from '../../src/engine/index.ts';
import { ProtectPipeline, type PipelineDeps } from '../../src/stream/protect/pipeline.ts';
import { StreamMetrics } from '../../src/stream/protect/stream-metrics.ts';
import { jsonSerde } from '../../src/stream/serde/json/json-serde.ts';
import { pipelineEntry } from '../helpers/pipeline-yaml.ts';
import { EXAMPLE_CONFIG_TEXT, keysFor, veilConfigOrFail } from '../helpers/engine-fixture.ts';

/**
 * The example configuration with one JSON pipeline `p` (raw → clean, dead letters to dlq) that
 * protects `email` as Customer.email: the pipeline the stream's unit tests run on a FakeKafka.
 * `extra` adds lines to the pipeline (e.g. `missing: dead-letter`).
 */
export function emailPipelineConfig(extra: readonly string[] = []) {
  return veilConfigOrFail(`${EXAMPLE_CONFIG_TEXT}\npipelines:\n${pipelineEntry({ raw: 'raw', clean: 'clean', dlq: 'dlq', settings: extra })}`);
}

/**
 * The ProtectPipeline `p` of `config` (an emailPipelineConfig) on `kafka`: JSON records, an engine
 * with random keys, fresh metrics and a silent log; `deps` replace or add to these.
 */
export function emailProtectPipeline(config: VeilConfig, kafka: PipelineDeps['kafka'], deps: Partial<PipelineDeps> = {}): ProtectPipeline {
  return new ProtectPipeline({
    name: 'p',
    config: config.pipelines.p!,
    configVersion: config.version,
    engine: new Engine({ config: config.engine, keys: keysFor(config.engine) }),
    kafka,
    serde: jsonSerde(),
    metrics: new StreamMetrics(),
    log: pino({ level: 'silent' }),
    ...deps,
  });
}
