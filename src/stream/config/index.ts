/**
 * The configuration front door of src/stream: the `pipelines` and `responders` sections of the
 * configuration file, their schemas and cross-checks (composed in src/app/config-file.ts). Code
 * outside src/stream/config imports only this file.
 */
export {
  keysSchema,
  pipelineIssues,
  pipelineSchema,
  topicNameSchema,
  unmappedPolicy,
  unmappedSchema,
  type PipelineConfig,
  type UnmappedPolicy,
} from './pipeline-config.ts';
export { responderSchema, type ResponderConfig } from './responder-config.ts';
