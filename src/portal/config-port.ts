import type { CompiledConfig, CompileResult } from '../engine/index.ts';

/**
 * A pipeline as the Pipelines page shows it: the fields of src/stream's PipelineConfig the portal
 * reads (the portal imports no sibling adapter; the composed configuration is checked against this
 * where the wiring hands it over).
 */
export interface PipelineView {
  description?: string;
  source: { topics: readonly string[] } | { pattern: string };
  sink: { topic: string } | { rename: { from: string; to: string } };
  deadLetterTopic: string;
  format: string;
  delivery: string;
  fields: readonly { path: string; field: string }[];
  key?: { field: string };
  /** how mapped paths match a record's keys: `insensitive` (default) folds case, `exact` does not */
  keys?: string;
  /** the identity the pipeline acts with: a draft mapping more paths grants it Protect on their fields when it lacks that */
  roles?: readonly string[];
  rightsEvidences?: Readonly<Record<string, string>>;
  metricsUrls?: readonly string[];
  /** the unmapped guard: its action, or the object naming it (`{ action: report, … }`) */
  unmapped?: string | { action?: string };
}

/**
 * What the portal reads of a composed configuration: src/app/config-file.ts's VeilConfig has it
 * and more (identity, service, gateway, …), none of which the portal needs.
 */
export interface ConfigView {
  /** what the engine runs: key references, sequences, classes, contexts */
  engine: CompiledConfig;
  pipelines: Readonly<Record<string, PipelineView>>;
  /** the short hash of the configuration document */
  version: string;
}

/** The whole configuration's compiler: every section's schema and cross-checks; never throws for a bad configuration. */
export type ConfigCompiler = (text: string) => CompileResult<ConfigView>;

/**
 * What the portal needs of the wiring to check, test and publish a configuration text: the product's
 * configuration is composed in src/app (every adapter's section), which the portal does not import.
 * src/app/open-portal.ts builds it.
 */
export interface ConfigPort {
  /** compiles a version or draft (drafts are shown, tested and published only if this finds no error) */
  compile: ConfigCompiler;
  /**
   * Makes the keystore able to serve a configuration about to be published, or throws (a VeilError,
   * KEY_UNAVAILABLE): in development the keys it references and the keystore lacks are created.
   */
  prepareKeys(config: CompiledConfig): Promise<void>;
  /**
   * The sandbox thread's entry module (SandboxRunner starts it): it calls `serveSandboxJobs`
   * (sandbox-worker.ts) with the same compiler as `compile`.
   */
  sandboxWorker: URL;
}
