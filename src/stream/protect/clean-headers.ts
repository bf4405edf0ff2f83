import type { PipelineConfig } from '../config/index.ts';
import type { Headers } from '../../kafka/index.ts';

const utf8 = (s: string) => Buffer.from(s, 'utf8');

/**
 * The headers clean records carry: pipeline, configuration version, and the paths protected in
 * that record (veil.protected.fields). Lists are frozen and shared by every record with the same
 * protected paths, so an adapter may encode each once; the cache is per configuration version.
 * The raw record's own headers go around them as they came; with tracing on, a record's single
 * valid traceparent is the one header that changes — in place, to name veil's span for the record
 * (src/observability/stream-trace.ts) — and a record without one gets none added.
 */
export class CleanHeaders {
  private readonly byFields = new Map<string, Headers>();
  private readonly name: string;
  private readonly c: PipelineConfig;
  /** the configuration version its records are protected under (named on a batch's span too) */
  readonly configVersion: string;

  constructor(name: string, c: PipelineConfig, configVersion: string) {
    this.name = name;
    this.c = c;
    this.configVersion = configVersion;
  }

  of(fields: string | undefined): Headers {
    const list = fields ?? [...this.c.fields.map((f) => f.path), ...(this.c.key ? ['(key)'] : [])].join(',');
    let headers = this.byFields.get(list);
    if (headers !== undefined) return headers;
    headers = Object.freeze([
      { key: 'veil.pipeline', value: utf8(this.name) },
      { key: 'veil.config.version', value: utf8(this.configVersion) },
      { key: 'veil.protected.fields', value: utf8(list) },
    ]);
    // bounded: guard-protected paths vary with the records (a map's keys are `*`, but names are not)
    if (this.byFields.size >= 1024) this.byFields.clear();
    this.byFields.set(list, headers);
    return headers;
  }
}
