import { planChunks, type Chunk, type Instance } from './batching.ts';
import { clientError, isObject, VeilClientError } from './errors.ts';
import { apply, collect, compileFieldMap, pointIntoObjects, type FieldMap } from './field-map.ts';
import { postOnce, type FetchLike } from './http.ts';
import { clientLimits, type ClientLimits } from './limits.ts';
import { groupBySubject, roleAndSubject, subjectsOf } from './subjects.ts';
import { retryPolicy, systemClock, withRetry, type Clock, type RetryOptions, type RetryPolicy } from './retry.ts';
import { clientCredentials, type TokenSource } from './token-source.ts';

export interface Evidence {
  name: string;
  value: string;
}

/** Values that share a rights context and an action: one request element (or several, split). */
export interface Operation {
  /** the Action evidence of the processing context: Protect, Unprotect, Mask, ... */
  action: string;
  /** the Role evidence of the rights context (default: the client's `role`) */
  role?: string;
  /** more rights-context evidences, if the configuration uses any */
  evidences?: readonly Evidence[];
  /** the data subject of the values: the Subject evidence of the processing context (keys scoped to the subject) */
  subject?: string;
  instances: readonly Instance[];
}

export interface CallOptions {
  /** cancels the operation, waits included */
  signal?: AbortSignal;
}

/** protect() and unprotect(): the Role evidence, and the data subject of all the values or of each (index-aligned) */
export interface ValueOptions {
  role?: string;
  subject?: string | readonly (string | undefined)[];
}

export interface FieldOptions<T = object> extends CallOptions {
  /** the Role evidence (default: the client's `role`) */
  role?: string;
  /**
   * the data subject of the objects' values (keys scoped to the subject): one id for them all, or
   * each object's own — e.g. `(customer) => customer.id` — one request per subject in the call
   */
  subject?: string | ((object: T, index: number) => string);
}

export interface VeilClientOptions {
  /** veil's base URL, e.g. http://127.0.0.1:8080 */
  url: string;
  clientId: string;
  clientSecret: string;
  /** default `${url}/connect/token` */
  tokenUrl?: string;
  /** the Role evidence when an operation names none */
  role?: string;
  /** the service's call-size limits, when configured other than its defaults */
  limits?: Partial<ClientLimits>;
  retry?: RetryOptions;
  /** one HTTP attempt at most this long (default 10 s) */
  attemptTimeoutMs?: number;
  /** refresh the token this long before it expires (default 30 s) */
  tokenRefreshSkewMs?: number;
  /** calls in flight at once when an operation needs several (default 2) */
  concurrency?: number;
  /** tests inject these; applications keep the defaults (global fetch, the system clock) */
  fetch?: FetchLike;
  clock?: Clock;
  tokens?: TokenSource;
}

/**
 * The application-layer client of veil (spec §1.6 "Application-layer"): values are protected
 * before they are stored and unprotected after they are read, in as few /transform calls as
 * the service's limits allow.
 */
export class VeilClient {
  readonly #transformUrl: string;
  readonly #role: string | undefined;
  readonly #limits: ClientLimits;
  readonly #retry: RetryPolicy;
  readonly #attemptTimeoutMs: number;
  readonly #concurrency: number;
  readonly #fetch: FetchLike;
  readonly #clock: Clock;
  readonly #tokens: TokenSource;

  constructor(options: VeilClientOptions) {
    const base = options.url.replace(/\/+$/, '');
    this.#transformUrl = `${base}/transform`;
    this.#role = options.role;
    this.#limits = clientLimits(options.limits);
    this.#retry = retryPolicy(options.retry);
    this.#attemptTimeoutMs = options.attemptTimeoutMs ?? 10_000;
    this.#concurrency = Math.max(1, Math.floor(options.concurrency ?? 2));
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#clock = options.clock ?? systemClock;
    this.#tokens =
      options.tokens ??
      clientCredentials({
        tokenUrl: options.tokenUrl ?? `${base}/connect/token`,
        clientId: options.clientId,
        clientSecret: options.clientSecret,
        ...(options.tokenRefreshSkewMs === undefined ? {} : { refreshSkewMs: options.tokenRefreshSkewMs }),
        fetch: this.#fetch,
        clock: this.#clock,
        retry: this.#retry,
        attemptTimeoutMs: this.#attemptTimeoutMs,
      });
  }

  /**
   * Protects values of one role; the answer lists the protected values in the same order.
   * `subject`: the data subject of every value, or of each (index-aligned): one request per subject.
   */
  async protect(instances: readonly Instance[], options: CallOptions & ValueOptions = {}): Promise<string[]> {
    return this.#values('Protect', instances, options);
  }

  /** Unprotects protected values; the role must be granted Unprotect on each field. */
  async unprotect(instances: readonly Instance[], options: CallOptions & ValueOptions = {}): Promise<string[]> {
    return this.#values('Unprotect', instances, options);
  }

  async #values(action: string, instances: readonly Instance[], options: CallOptions & ValueOptions): Promise<string[]> {
    const subjects = typeof options.subject === 'object' ? options.subject : instances.map(() => options.subject as string | undefined);
    const groups = groupBySubject(subjects);
    const answers = await this.transform(
      groups.map(({ subject, indices }) => ({ action, instances: indices.map((i) => instances[i]!), ...roleAndSubject({ role: options.role, subject }) })),
      options,
    );
    const values = new Array<string>(instances.length);
    groups.forEach(({ indices }, g) => indices.forEach((i, k) => (values[i] = answers[g]![k]!)));
    return values;
  }

  /**
   * Protects the mapped fields of an object, or of every object of a list, in one call (split
   * only at the service's limits). Returns new objects; unmapped fields are copied as they are,
   * absent and null fields stay so. An error's pointer is into the input: `/email`, `/3/email`.
   */
  protectFields<T extends object>(fields: FieldMap, input: readonly T[], options?: FieldOptions<T>): Promise<T[]>;
  protectFields<T extends object>(fields: FieldMap, input: T, options?: FieldOptions<T>): Promise<T>;
  async protectFields<T extends object>(fields: FieldMap, input: T | readonly T[], options: FieldOptions<T> = {}): Promise<T | T[]> {
    return this.#fields('Protect', fields, input, options);
  }

  /** The reverse of protectFields: the role must be granted Unprotect on every mapped field present. */
  unprotectFields<T extends object>(fields: FieldMap, input: readonly T[], options?: FieldOptions<T>): Promise<T[]>;
  unprotectFields<T extends object>(fields: FieldMap, input: T, options?: FieldOptions<T>): Promise<T>;
  async unprotectFields<T extends object>(fields: FieldMap, input: T | readonly T[], options: FieldOptions<T> = {}): Promise<T | T[]> {
    return this.#fields('Unprotect', fields, input, options);
  }

  async #fields<T extends object>(action: string, fields: FieldMap, input: T | readonly T[], options: FieldOptions<T>): Promise<T | T[]> {
    const list = Array.isArray(input);
    const objects: readonly T[] = list ? input : [input as T];
    const collected = collect(objects, compileFieldMap(fields), list ? (i) => `/${i}` : () => '');
    const values: string[] = [];
    if (collected.instances.length) {
      // one operation per subject (all of them one when the option names one subject, or none)
      const groups = groupBySubject(
        subjectsOf(
          collected.locations.map((l) => l.object),
          objects,
          options.subject,
        ),
      );
      try {
        const answers = await this.transform(
          groups.map(({ subject, indices }) => ({
            action,
            instances: indices.map((i) => collected.instances[i]!),
            ...roleAndSubject({ role: options.role, subject }),
          })),
          options,
        );
        groups.forEach(({ indices }, g) => indices.forEach((i, k) => (values[i] = answers[g]![k]!)));
      } catch (e) {
        throw pointIntoObjects(e, collected, (operation, instance) => groups[operation]?.indices[instance]);
      }
    }
    const result = apply(objects, collected, values);
    return list ? result : result[0]!;
  }

  /**
   * Transforms every operation's instances: one /transform call when they fit the limits, as
   * few as they allow otherwise. Atomic from the caller's view: all answers, or one error. An
   * error's pointer refers to the logical request `/requests/<operation>/instances/<index>`.
   */
  async transform(operations: readonly Operation[], options: CallOptions = {}): Promise<string[][]> {
    const ops = operations.map((op) => ({
      ...op,
      instances: op.instances.map((i) => ({ className: i.className, propertyName: i.propertyName, value: i.value })),
    }));
    const contexts = contextsOf(ops, this.#role);
    const envelope = new TextEncoder().encode(
      JSON.stringify({ rightsContexts: contexts.rights, processingContexts: contexts.processing, requests: [] }),
    ).length;
    const chunks = planChunks(
      ops.map((op) => op.instances),
      this.#limits,
      envelope,
    );
    const results = ops.map((op) => new Array<string>(op.instances.length));
    await pool(chunks, this.#concurrency, async (chunk) => {
      const answer = await this.#call(chunk, ops, contexts, options.signal);
      chunk.forEach((part, k) => answer[k]!.forEach((value, i) => (results[part.operation]![part.start + i] = value)));
    });
    return results;
  }

  /** One /transform call, with retries and one fresh token after a 401. */
  async #call(chunk: Chunk, ops: readonly (Operation & { instances: Instance[] })[], contexts: Contexts, signal: AbortSignal | undefined): Promise<string[][]> {
    const guids = chunk.map(() => crypto.randomUUID());
    const used = (pick: (op: Operation) => string) => new Set(chunk.map((p) => pick(ops[p.operation]!)));
    const rightsUsed = used((op) => contexts.rightsKey(op));
    const processingUsed = used((op) => contexts.processingKey(op));
    const body = JSON.stringify({
      rightsContexts: contexts.rights.filter((c) => rightsUsed.has(c.key)).map(({ guid, evidences }) => ({ guid, evidences })),
      processingContexts: contexts.processing.filter((c) => processingUsed.has(c.key)).map(({ guid, evidences }) => ({ guid, evidences })),
      requests: chunk.map((part, k) => {
        const op = ops[part.operation]!;
        return {
          guid: guids[k],
          rightsContext: contexts.rightsGuid(op),
          processingContext: contexts.processingGuid(op),
          instances: op.instances.slice(part.start, part.end),
        };
      }),
    });
    try {
      const answer = await withRetry(this.#retry, this.#clock, signal, async (ctx) => {
        const post = async (token: string) =>
          postOnce(
            this.#transformUrl,
            {
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
              body,
            },
            ctx,
            { fetch: this.#fetch, clock: this.#clock, attemptTimeoutMs: this.#attemptTimeoutMs },
          );
        const token = await this.#tokens.get();
        try {
          return await post(token);
        } catch (e) {
          if (!(e instanceof VeilClientError) || e.status !== 401) throw e;
          // expired or revoked between the cache's view and the service's: once with a new token
          this.#tokens.invalidate(token);
          return await post(await this.#tokens.get());
        }
      });
      return readAnswer(answer.body, answer.status, chunk, guids, ops);
    } catch (e) {
      throw e instanceof VeilClientError ? relocate(e, chunk) : e;
    }
  }
}

interface Contexts {
  rights: { key: string; guid: string; evidences: Evidence[] }[];
  processing: { key: string; guid: string; evidences: Evidence[] }[];
  rightsKey(op: Operation): string;
  processingKey(op: Operation): string;
  rightsGuid(op: Operation): string;
  processingGuid(op: Operation): string;
}

/** One rights context per distinct set of rights evidences, one processing context per action and subject. */
function contextsOf(ops: readonly Operation[], defaultRole: string | undefined): Contexts {
  const rightsEvidences = (op: Operation): Evidence[] => {
    const role = op.role ?? defaultRole;
    return [...(role === undefined ? [] : [{ name: 'Role', value: role }]), ...(op.evidences ?? []).map((e) => ({ name: e.name, value: e.value }))];
  };
  const rightsKey = (op: Operation) => JSON.stringify(rightsEvidences(op));
  const rights = new Map<string, { key: string; guid: string; evidences: Evidence[] }>();
  const processing = new Map<string, { key: string; guid: string; evidences: Evidence[] }>();
  for (const op of ops) {
    const key = rightsKey(op);
    if (!rights.has(key)) rights.set(key, { key, guid: crypto.randomUUID(), evidences: rightsEvidences(op) });
    const pk = processingKey(op);
    if (!processing.has(pk)) {
      const evidences = [{ name: 'Action', value: op.action }, ...(op.subject === undefined ? [] : [{ name: 'Subject', value: op.subject }])];
      processing.set(pk, { key: pk, guid: crypto.randomUUID(), evidences });
    }
  }
  return {
    rights: [...rights.values()],
    processing: [...processing.values()],
    rightsKey,
    processingKey,
    rightsGuid: (op) => rights.get(rightsKey(op))!.guid,
    processingGuid: (op) => processing.get(processingKey(op))!.guid,
  };
}

/** One processing context per action and data subject. */
const processingKey = (op: Operation): string => JSON.stringify([op.action, op.subject ?? null]);

/** Checks the answer against the call (spec §2.7) and returns the values per request element. */
function readAnswer(body: unknown, status: number, chunk: Chunk, guids: string[], ops: readonly { instances: Instance[] }[]): string[][] {
  const invalid = () => clientError('RESPONSE_INVALID', { status });
  if (!isObject(body) || !Array.isArray(body.responses)) throw invalid();
  const byGuid = new Map<string, unknown>();
  for (const r of body.responses) if (isObject(r) && typeof r.request === 'string') byGuid.set(r.request.toLowerCase(), r.instances);
  return chunk.map((part, k) => {
    const sent = ops[part.operation]!.instances.slice(part.start, part.end);
    const got = byGuid.get(guids[k]!);
    if (!Array.isArray(got) || got.length !== sent.length) throw invalid();
    return got.map((instance, i) => {
      // a value is only ever put back where the same field was sent
      if (
        !isObject(instance) ||
        typeof instance.value !== 'string' ||
        instance.className !== sent[i]!.className ||
        instance.propertyName !== sent[i]!.propertyName
      )
        throw invalid();
      return instance.value;
    });
  });
}

/** Rewrites `/requests/<k>/instances/<i>` of one call into the logical request's positions. */
function relocate(error: VeilClientError, chunk: Chunk): VeilClientError {
  return error.withPointers((pointer) => {
    const m = /^\/requests\/(\d+)(\/instances\/(\d+))?(.*)$/.exec(pointer);
    const part = m ? chunk[Number(m[1])] : undefined;
    if (!m || !part) return pointer;
    return m[2] === undefined ? `/requests/${part.operation}${m[4]}` : `/requests/${part.operation}/instances/${part.start + Number(m[3])}${m[4]}`;
  });
}

/** Runs `work` over `items`, at most `size` at once; the first failure rejects. */
async function pool<T>(items: readonly T[], size: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async () => {
    try {
      while (!failed && next < items.length) await work(items[next++]!);
    } catch (e) {
      failed = true;
      throw e;
    }
  };
  await Promise.all(Array.from({ length: Math.min(size, items.length) }, worker));
}
