import { isSubjectId, ValueError, VeilError, type Chain, type Engine } from '../../engine/index.ts';
import { fetchSubjectKeys, type SubjectKeyStore } from '../../subjects/index.ts';
import { likelihoodLevel, unmappedKeyKindOfBytes } from '../../drift-guard/index.ts';
import { unmappedPolicy, type PipelineConfig } from '../config/index.ts';
import { mappings } from '../serde/index.ts';
import type { GuardPlan, RecordProtection, Serde } from '../serde/index.ts';
import { StreamError } from '../stream-error.ts';

/** One record to protect: its clean topic (the serde registers clean schemas per topic), key and value. */
export interface ChunkItem {
  topic: string;
  key: Buffer | null;
  value: Buffer | null;
}

/**
 * A record's outcome: its protected key and value with the paths protected in it (comma-separated,
 * `(key)` for the key; absent: every mapped path) and, in the guard's report mode, the path and
 * kind the guard would have refused it for; or the code it is dead-lettered with and the path
 * (and guard kind) the code is about, and the writer's schema id when the code is about the schema.
 */
export type ChunkOutcome =
  | { key: Buffer | null; value: Buffer; fields?: string; reported?: { path: string; kind: string } }
  | { code: string; path?: string; kind?: string; schema?: number };

/** where a record key's finding is reported */
export const KEY_PATH = '(key)';

/**
 * What protects a chunk of records (pure work, no Kafka): in this thread (RecordProtector) or on
 * a pool of worker threads (ProtectPool). A retriable failure (the registry unreachable) rejects
 * the whole chunk; a record that cannot be protected is an outcome with its code.
 */
export interface ChunkProtector {
  protectChunk(items: readonly ChunkItem[]): Promise<ChunkOutcome[]>;
  /**
   * The caller is done with a chunk's outcomes (sent, or their batch failed): protection
   * elsewhere may reuse the buffer their keys and values are views of — none of them may be read
   * after this call.
   */
  release?(outcomes: readonly ChunkOutcome[]): void;
  /** protection elsewhere (worker threads): re-read the keystore and/or bind under a configuration version's file */
  reload?(what: { keys?: boolean; configFile?: string }): Promise<void>;
  close(): Promise<void>;
}

const utf8 = (s: string) => Buffer.from(s, 'utf8');

/** A record's data subject, or the code it is refused with; `at`: the path (or `(key)`) it was read at. */
type RecordSubject = { id: string; at: string } | { code: string; at?: string };

/**
 * A pipeline's fields bound once (authorization happens here: a pipeline whose identity may not
 * protect its fields does not start) and the protection of one record's key and value.
 */
export class RecordProtector implements ChunkProtector {
  readonly protection: RecordProtection;
  /** the guard's report mode: the protection without the guard, for records the guard would refuse (they pass, reported) */
  private readonly unguarded?: RecordProtection;
  private readonly keyTransform?: (v: string) => string;
  private readonly serde: Serde;
  /** every path the pipeline maps, as veil.protected.fields says when a serde cannot tell per record */
  private readonly allFields: string;
  /** fields scoped to the data subject: each record runs under its subject's key (the record key) */
  private readonly subjects?: { store: SubjectKeyStore; engine: Engine; read: (item: ChunkItem) => RecordSubject };

  /**
   * `rewrap`: the fields are bound for re-protection (Engine.bindRewrap): each value is unprotected
   * under its own key version with these processing evidences and protected under the primary; a
   * value of an erased data subject is carried through unchanged and counted (`erasedKept`).
   */
  constructor(deps: {
    name: string;
    config: PipelineConfig;
    engine: Engine;
    serde: Serde;
    rewrap?: { unprotectEvidences: Record<string, string>; erasedKept?: (count: number) => void };
    subjects?: SubjectKeyStore;
  }) {
    const c = deps.config;
    this.serde = deps.serde;
    const guard = unmappedPolicy(c);
    const guardKinds = guard.action === 'protect' ? Object.entries(guard.protect) : [];
    const tags = Object.entries(c.tags ?? {});
    const fields = [...c.fields.map((f) => f.field), ...(c.key ? [c.key.field] : []), ...guardKinds.map(([, f]) => f), ...tags.map(([, f]) => f)].map((f) => {
      const [className, propertyName] = f.split('.') as [string, string];
      return { className, propertyName };
    });
    const evidences = (e: Record<string, string>) => Object.entries(e).map(([name, value]) => ({ name, value }));
    const request = {
      identity: { subject: `pipeline:${deps.name}`, roles: c.roles },
      rightsEvidences: evidences(c.rightsEvidences),
      processingEvidences: evidences(c.processingEvidences),
      fields,
    };
    const kept = deps.rewrap?.erasedKept;
    const bound = deps.rewrap
      ? deps.engine.bindRewrap({ ...request, unprotectEvidences: evidences(deps.rewrap.unprotectEvidences) }, kept ? { erasedKept: kept } : {})
      : deps.engine.bind(request);
    if (bound.reveals) throw new VeilError('CONFIG_INVALID', `pipeline ${deps.name} would unprotect: protect pipelines only protect`);
    if (bound.subjectScoped.some(Boolean)) {
      if (!c.subject)
        throw new VeilError(
          'CONFIG_INVALID',
          `pipeline ${deps.name} maps fields whose keys are scoped to the data subject: say where a record names its subject (subject: { from: key }, or { from: value, path: … } in a json or json-schema pipeline)`,
        );
      if (!deps.subjects)
        throw new VeilError(
          'CONFIG_INVALID',
          `pipeline ${deps.name} maps fields whose keys are scoped to the data subject, and runs without the subject-key store`,
        );
      this.subjects = { store: deps.subjects, engine: deps.engine, read: subjectOf(c.subject, c.keys !== 'exact', deps.serde, deps.name) };
    }
    const keyed = c.key ? 1 : 0;
    const guardPlan: GuardPlan | undefined =
      guard.action === 'pass'
        ? undefined
        : {
            // report mode finds as dead-letter does; protectChunk passes what it would refuse
            action: guard.action === 'report' ? 'dead-letter' : guard.action,
            threshold: likelihoodLevel(guard.threshold),
            allow: guard.allow,
            protect: new Map<string, Chain>(guardKinds.map(([kind], i) => [kind, bound.transforms[c.fields.length + keyed + i]!])),
            retypes: c.format === 'json',
          };
    const tagChains = new Map<string, Chain>(tags.map(([tag], i) => [tag, bound.transforms[c.fields.length + keyed + guardKinds.length + i]!]));
    this.protection = {
      maps: mappings(
        c.fields.map((f) => f.path),
        bound.transforms,
      ),
      missing: c.missing,
      validate: c.validate,
      foldKeys: c.keys !== 'exact',
      ...(guardPlan ? { guard: guardPlan } : {}),
      ...(tags.length ? { tags: tagChains } : {}),
    };
    if (guard.action === 'report') {
      const unguarded = { ...this.protection };
      delete unguarded.guard;
      this.unguarded = unguarded;
    }
    if (c.key) this.keyTransform = bound.transforms[c.fields.length];
    this.allFields = [...c.fields.map((f) => f.path), ...(c.key ? [KEY_PATH] : [])].join(',');
  }

  /** The protected key and value; throws a StreamError naming why the record cannot be. */
  async protect(item: ChunkItem, protection = this.protection): Promise<{ key: Buffer | null; value: Buffer; fields?: string }> {
    if (item.value === null) throw new StreamError('RECORD_MALFORMED', 'the record has no value');
    const key = this.protectKey(item.key, protection);
    const value = await this.serde.protect(item.value, protection, item.topic);
    return { key: key.bytes, value, fields: this.fieldsOf(undefined, key.path) };
  }

  async protectChunk(items: readonly ChunkItem[]): Promise<ChunkOutcome[]> {
    const out = await this.protectChunkWith(items, this.protection);
    return this.unguarded === undefined ? out : this.passReported(items, out, this.unguarded);
  }

  /**
   * The guard's report mode: each record the guard refused is protected again without it and
   * passes, carrying what the guard found (path and kind) for the pipeline to count and log.
   * Records without a finding are protected once.
   */
  private async passReported(items: readonly ChunkItem[], out: ChunkOutcome[], unguarded: RecordProtection): Promise<ChunkOutcome[]> {
    const flagged: number[] = [];
    out.forEach((o, i) => {
      if ('code' in o && o.code === 'UNMAPPED_PERSONAL_DATA') flagged.push(i);
    });
    if (flagged.length === 0) return out;
    const again = await this.protectChunkWith(
      flagged.map((i) => items[i]!),
      unguarded,
    );
    flagged.forEach((i, k) => {
      const found = out[i] as { path?: string; kind?: string };
      const o = again[k]!;
      out[i] = 'code' in o ? o : { ...o, reported: { path: found.path ?? '', kind: found.kind ?? '' } };
    });
    return out;
  }

  private async protectChunkWith(items: readonly ChunkItem[], protection: RecordProtection): Promise<ChunkOutcome[]> {
    if (this.subjects) return this.protectChunkBySubject(items, this.subjects, protection);
    if (this.serde.protectManySync) return this.protectChunkSync(items, this.serde.protectManySync.bind(this.serde), protection);
    if (this.serde.protectMany) return this.protectChunkBatch(items, this.serde.protectMany.bind(this.serde), protection);
    const out: ChunkOutcome[] = [];
    for (const item of items) {
      try {
        out.push(await this.protect(item, protection));
      } catch (e) {
        if (e instanceof StreamError && !e.retriable) out.push(failed(e));
        else throw e;
      }
    }
    return out;
  }

  /**
   * Records of subject-scoped fields: the chunk's subjects' keys fetched at once (created on first
   * use), then each record protected on its own under its subject's key — a batch of one field's
   * values would mix subjects. A record that names no subject, or no subject id, is refused.
   */
  private async protectChunkBySubject(
    items: readonly ChunkItem[],
    s: NonNullable<RecordProtector['subjects']>,
    protection: RecordProtection,
  ): Promise<ChunkOutcome[]> {
    const reads = items.map(s.read);
    const ring = await fetchSubjectKeys(
      s.store,
      reads.map((r) => ('id' in r && isSubjectId(r.id) ? { id: r.id, create: true } : undefined)),
      s.engine.returningSubjects,
    );
    return Promise.all(
      items.map(async (item, i): Promise<ChunkOutcome> => {
        const read = reads[i]!;
        if (!('id' in read)) return { code: read.code, ...(read.at ? { path: read.at } : {}) };
        if (!isSubjectId(read.id)) return { code: 'SUBJECT_ID_INVALID', path: read.at };
        try {
          return await s.engine.withSubjectAsync(read.id, ring, () => this.protect(item, protection));
        } catch (e) {
          if (e instanceof StreamError && !e.retriable) return failed(e);
          throw e;
        }
      }),
    );
  }

  /**
   * A serde that protects synchronously gets the chunk's values as one batch (each field's values
   * protected together). Per record, what fails first is what protect() would report: no value,
   * then the key, then the value.
   */
  private protectChunkSync(items: readonly ChunkItem[], many: NonNullable<Serde['protectManySync']>, protection: RecordProtection): ChunkOutcome[] {
    const present = items.filter((item): item is ChunkItem & { value: Buffer } => item.value !== null);
    const fields: (string | undefined)[] = [];
    return this.outcomes(
      items,
      present.length
        ? many(
            present.map((item) => item.value),
            protection,
            fields,
          )
        : [],
      fields,
      protection,
    );
  }

  /** The same for a serde that batches asynchronously (registry formats). */
  private async protectChunkBatch(items: readonly ChunkItem[], many: NonNullable<Serde['protectMany']>, protection: RecordProtection): Promise<ChunkOutcome[]> {
    const present = items.filter((item): item is ChunkItem & { value: Buffer } => item.value !== null);
    const fields: (string | undefined)[] = [];
    return this.outcomes(
      items,
      present.length
        ? await many(
            present.map((item) => item.value),
            protection,
            present.map((item) => item.topic),
            fields,
          )
        : [],
      fields,
      protection,
    );
  }

  /** each item's outcome, given the serde's results (and protected paths) for the items with a value, in order */
  private outcomes(
    items: readonly ChunkItem[],
    values: readonly (Buffer | StreamError)[],
    fields: readonly (string | undefined)[],
    protection: RecordProtection,
  ): ChunkOutcome[] {
    let next = 0;
    return items.map((item): ChunkOutcome => {
      if (item.value === null) return { code: 'RECORD_MALFORMED' };
      const at = next++;
      const value = values[at]!;
      let key: { bytes: Buffer | null; path?: string };
      try {
        key = this.protectKey(item.key, protection);
      } catch (e) {
        if (e instanceof StreamError && !e.retriable) return failed(e);
        throw e;
      }
      return value instanceof StreamError ? failed(value) : { key: key.bytes, value, fields: this.fieldsOf(fields[at], key.path) };
    });
  }

  async close(): Promise<void> {}

  /** veil.protected.fields of one record: the value's protected paths (every mapped one when the serde cannot tell), then the key's */
  private fieldsOf(valuePaths: string | undefined, keyPath: string | undefined): string {
    if (valuePaths === undefined) return this.allFields;
    return keyPath === undefined ? valuePaths : valuePaths === '' ? keyPath : `${valuePaths},${keyPath}`;
  }

  /**
   * The record key protected by the pipeline's key mapping; without one, checked by the unmapped
   * guard like a value (an email as a key): refused, or protected as the guard's kind says.
   */
  private protectKey(key: Buffer | null, protection: RecordProtection): { bytes: Buffer | null; path?: string } {
    const guard = protection.guard;
    if (!this.keyTransform && (guard === undefined || key === null)) return { bytes: key };
    if (key === null) throw new StreamError('KEY_MISSING', 'the record has no key');
    let transform = this.keyTransform;
    if (transform === undefined) {
      const kind = unmappedKeyKindOfBytes(key, guard?.threshold);
      if (kind === undefined) return { bytes: key };
      transform = guard?.protect.get(kind);
      if (transform === undefined)
        throw new StreamError(
          'UNMAPPED_PERSONAL_DATA',
          `the record key holds ${kind === 'email' ? 'an' : 'a'} ${kind} and the pipeline does not protect keys`,
          { path: KEY_PATH, kind },
        );
    }
    try {
      return { bytes: utf8(transform(key.toString('utf8'))), path: KEY_PATH };
    } catch (e) {
      if (e instanceof ValueError) throw new StreamError(e.code, `record key: value ${e.message}`, { path: KEY_PATH });
      throw e;
    }
  }
}

/** Where a record names its data subject: its key, or a path of its value as its format reads it (Serde.subjectReader), with the path a refusal names. */
function subjectOf(source: PipelineConfig['subject'], foldKeys: boolean, serde: Serde, pipeline: string): (item: ChunkItem) => RecordSubject {
  if (source?.from === 'value') {
    if (!serde.subjectReader)
      throw new VeilError(
        'CONFIG_INVALID',
        `pipeline ${pipeline}: its format cannot name a record's subject at a path of the value: name it by the record key`,
      );
    const read = serde.subjectReader(source.path, foldKeys);
    const at = source.path;
    return (item) => (item.value === null ? { code: 'RECORD_MALFORMED' } : { ...read(item.value), at });
  }
  return (item) => (item.key === null ? { code: 'SUBJECT_REQUIRED', at: KEY_PATH } : { id: item.key.toString('utf8'), at: KEY_PATH });
}

/** a dead-lettered outcome: the code, and the path, kind and schema it is about */
function failed(e: StreamError): ChunkOutcome {
  return {
    code: e.code,
    ...(e.path === undefined ? {} : { path: e.path }),
    ...(e.kind === undefined ? {} : { kind: e.kind }),
    ...(e.schema === undefined ? {} : { schema: e.schema }),
  };
}
