import { ValueError, VeilError, type Engine } from '../engine/index.ts';
import type { PipelineConfig } from './pipeline-config.ts';
import { mappings } from './protect-record.ts';
import type { RecordProtection, Serde } from './serde/serde.ts';
import { StreamError } from './stream-error.ts';

/** One record to protect: its clean topic (the serde registers clean schemas per topic), key and value. */
export interface ChunkItem {
  topic: string;
  key: Buffer | null;
  value: Buffer | null;
}

/** A record's outcome: its protected key and value, or the code it is dead-lettered with. */
export type ChunkOutcome = { key: Buffer | null; value: Buffer } | { code: string };

/**
 * What protects a chunk of records (pure work, no Kafka): in this thread (RecordProtector) or on
 * a pool of worker threads (ProtectPool). A retriable failure (the registry unreachable) rejects
 * the whole chunk; a record that cannot be protected is an outcome with its code.
 */
export interface ChunkProtector {
  protectChunk(items: readonly ChunkItem[]): Promise<ChunkOutcome[]>;
  /** protection elsewhere (worker threads): re-read the keystore and/or bind under a configuration version's file */
  reload?(what: { keys?: boolean; configFile?: string }): Promise<void>;
  close(): Promise<void>;
}

const utf8 = (s: string) => Buffer.from(s, 'utf8');

/**
 * A pipeline's fields bound once (authorization happens here: a pipeline whose identity may not
 * protect its fields does not start) and the protection of one record's key and value.
 */
export class RecordProtector implements ChunkProtector {
  readonly protection: RecordProtection;
  private readonly keyTransform?: (v: string) => string;
  private readonly serde: Serde;

  /**
   * `rewrap`: the fields are bound for re-protection (Engine.bindRewrap): each value is unprotected
   * under its own key version with these processing evidences and protected under the primary.
   */
  constructor(deps: { name: string; config: PipelineConfig; engine: Engine; serde: Serde; rewrap?: { unprotectEvidences: Record<string, string> } }) {
    const c = deps.config;
    this.serde = deps.serde;
    const fields = [...c.fields.map((f) => f.field), ...(c.key ? [c.key.field] : [])].map((f) => {
      const [className, propertyName] = f.split('.') as [string, string];
      return { className, propertyName };
    });
    const evidences = (e: Record<string, string>) => Object.entries(e).map(([name, value]) => ({ name, value }));
    const request = { identity: { subject: `pipeline:${deps.name}`, roles: c.roles }, rightsEvidences: evidences(c.rightsEvidences), processingEvidences: evidences(c.processingEvidences), fields };
    const bound = deps.rewrap ? deps.engine.bindRewrap({ ...request, unprotectEvidences: evidences(deps.rewrap.unprotectEvidences) }) : deps.engine.bind(request);
    if (bound.reveals) throw new VeilError('CONFIG_INVALID', `pipeline ${deps.name} would unprotect: protect pipelines only protect`);
    this.protection = { maps: mappings(c.fields.map((f) => f.path), bound.transforms), missing: c.missing, validate: c.validate };
    if (c.key) this.keyTransform = bound.transforms[c.fields.length];
  }

  /** The protected key and value; throws a StreamError naming why the record cannot be. */
  async protect(item: ChunkItem): Promise<{ key: Buffer | null; value: Buffer }> {
    if (item.value === null) throw new StreamError('RECORD_MALFORMED', 'the record has no value');
    return { key: this.protectKey(item.key), value: await this.serde.protect(item.value, this.protection, item.topic) };
  }

  async protectChunk(items: readonly ChunkItem[]): Promise<ChunkOutcome[]> {
    if (this.serde.protectManySync) return this.protectChunkSync(items, this.serde.protectManySync.bind(this.serde));
    if (this.serde.protectMany) return this.protectChunkBatch(items, this.serde.protectMany.bind(this.serde));
    const out: ChunkOutcome[] = [];
    for (const item of items) {
      try {
        out.push(await this.protect(item));
      } catch (e) {
        if (e instanceof StreamError && !e.retriable) out.push({ code: e.code });
        else throw e;
      }
    }
    return out;
  }

  /**
   * A serde that protects synchronously gets the chunk's values as one batch (each field's values
   * protected together). Per record, what fails first is what protect() would report: no value,
   * then the key, then the value.
   */
  private protectChunkSync(items: readonly ChunkItem[], many: NonNullable<Serde['protectManySync']>): ChunkOutcome[] {
    const present = items.filter((item): item is ChunkItem & { value: Buffer } => item.value !== null);
    return this.outcomes(items, present.length ? many(present.map((item) => item.value), this.protection) : []);
  }

  /** The same for a serde that batches asynchronously (registry formats). */
  private async protectChunkBatch(items: readonly ChunkItem[], many: NonNullable<Serde['protectMany']>): Promise<ChunkOutcome[]> {
    const present = items.filter((item): item is ChunkItem & { value: Buffer } => item.value !== null);
    return this.outcomes(items, present.length ? await many(present.map((item) => item.value), this.protection, present.map((item) => item.topic)) : []);
  }

  /** each item's outcome, given the serde's results for the items with a value, in order */
  private outcomes(items: readonly ChunkItem[], values: readonly (Buffer | StreamError)[]): ChunkOutcome[] {
    let next = 0;
    return items.map((item): ChunkOutcome => {
      if (item.value === null) return { code: 'RECORD_MALFORMED' };
      const value = values[next++]!;
      let key: Buffer | null;
      try {
        key = this.protectKey(item.key);
      } catch (e) {
        if (e instanceof StreamError && !e.retriable) return { code: e.code };
        throw e;
      }
      return value instanceof StreamError ? { code: value.code } : { key, value };
    });
  }

  async close(): Promise<void> {}

  private protectKey(key: Buffer | null): Buffer | null {
    if (!this.keyTransform) return key;
    if (key === null) throw new StreamError('KEY_MISSING', 'the record has no key');
    try {
      return utf8(this.keyTransform(key.toString('utf8')));
    } catch (e) {
      if (e instanceof ValueError) throw new StreamError(e.code, `record key: value ${e.message}`);
      throw e;
    }
  }
}
