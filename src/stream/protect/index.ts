/**
 * The protect front door of src/stream: the protect pipeline (consume, protect, produce in
 * per-partition transactions), what protects a chunk of records (in this thread or in a pool of
 * worker threads), the serdes a pipeline's configuration picks, its metrics, the rewrap
 * pipeline's configuration and the check of a pipeline's mappings against the registry. Code
 * outside src/stream/protect imports only this file.
 */
export { ProtectPipeline, type PipelineDeps } from './pipeline.ts';
export { serdes } from './pipeline-serdes.ts';
export { registrySchemaIssues } from './pipeline-schema-check.ts';
export { ProtectPool, type WorkerReply, type WorkerRequest } from './protect-pool.ts';
export { RecordProtector, type ChunkItem, type ChunkOutcome, type ChunkProtector } from './record-protector.ts';
export { packItems, packOutcomes, SpareBuffers, unpackItems, unpackOutcomes } from './chunk-codec.ts';
export { rewrapPipeline, type RewrapSpec } from './rewrap-pipeline.ts';
export { StreamMetrics } from './stream-metrics.ts';
export { pipelinesLiveness } from './pipelines-health.ts';
// what Kafka last said to a consumer: the unprotect responders' readiness, as the pipelines'
export { KafkaContact, reportingContact } from './liveness.ts';
