import { pipelineEntry } from '../helpers/pipeline-yaml.ts';
import { EXAMPLE_CONFIG_TEXT, veilConfigOrFail } from '../helpers/engine-fixture.ts';

/**
 * The example configuration with one JSON pipeline `p` (raw → clean, dead letters to dlq) that
 * protects `email` as Customer.email: the pipeline the stream's unit tests run on a FakeKafka.
 * `extra` adds lines to the pipeline (e.g. `missing: dead-letter`).
 */
export function emailPipelineConfig(extra: readonly string[] = []) {
  return veilConfigOrFail(`${EXAMPLE_CONFIG_TEXT}\npipelines:\n${pipelineEntry({ raw: 'raw', clean: 'clean', dlq: 'dlq', settings: extra })}`);
}
