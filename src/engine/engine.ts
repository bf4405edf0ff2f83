import { pooledRandom } from './crypto/random-pool.ts';
import type { Primitives } from './crypto/primitives.ts';
import { ChainCache, chainThen, keepingErased, type Chain } from './chains.ts';
import { PROTECT, UNPROTECT, type CompiledConfig } from './config/compiled.ts';
import { combine, ValueError, VeilError, type ErrorDetail } from './errors.ts';
import type { KeyProvider } from './key-access/key-provider.ts';
import { SubjectSlot, type SubjectKeyring } from './key-access/subject-keyring.ts';
import { matchProcessing, matchRights, resolveContexts, type ContextSite, type ResolvedRights } from './contexts.ts';
import { checkIdentifiers } from './identifiers.ts';
import type { Identity } from './identity.ts';
import { transformRequestSchema, type Instance, type TransformRequest, type TransformResponse } from './request/schema.ts';
import { pointerOf } from './config/issues.ts';
import { decideField } from './field-access.ts';

export interface EngineOptions {
  config: CompiledConfig;
  keys: KeyProvider;
  /** secure random source; injectable so tests can pin AES-GCM nonces */
  random?: (bytes: Uint8Array) => Uint8Array;
  /** the keyed primitives: the native core's (src/native) from the wiring; the JavaScript engine's when absent */
  primitives?: Primitives;
}

/** One authorized request, ready to run: what audit records before any value is touched. */
export interface PlannedRequest {
  guid: string;
  index: number;
  action: string;
  /** true when some instance runs a sequence inverted: the call reveals cleartext */
  reveals: boolean;
  processingContext: string;
  rightsContexts: readonly string[];
  instances: readonly Instance[];
  chains: readonly Chain[];
  /**
   * the data subject of the request's values (its processing context's Subject evidence), when
   * some of its fields use a key scoped to the subject: the adapter fetches that subject's key
   * before execute() — creating it (`create`) when a sequence runs forward, else only reading it
   */
  subject?: { id: string; create: boolean };
}

export interface Plan {
  requests: readonly PlannedRequest[];
}

/** A configured field, `Class.property`. */
export interface FieldRef {
  className: string;
  propertyName: string;
}

/**
 * What a long-lived caller (a stream pipeline) asks to be authorized for once: its identity, the
 * evidences of its rights and processing contexts, and the fields it will transform.
 */
export interface BindRequest {
  identity: Identity;
  rightsEvidences: readonly { name: string; value: string }[];
  processingEvidences: readonly { name: string; value: string }[];
  fields: readonly FieldRef[];
}

/** The authorized action and one transform per field of the BindRequest, index-aligned. */
export interface BoundFields {
  action: string;
  /** true when some field runs a sequence inverted: the transforms reveal cleartext */
  reveals: boolean;
  transforms: readonly Chain[];
  /** index-aligned with transforms: whether the field's key is scoped to the data subject (run it in withSubject) */
  subjectScoped: readonly boolean[];
}

/** What authorization decided for one field: its chain, or why not (without request and pointer). */
type Decision = { chain: Chain; reveals: boolean; scoped: boolean } | (Omit<ErrorDetail, 'pointer' | 'request' | 'instance'> & { chain?: undefined });

/** Where a binding's evidences are named in its refusals. */
const BIND_RIGHTS: ContextSite = { label: '/rightsEvidences', evidences: '/rightsEvidences' };
const BIND_PROCESSING: ContextSite = { label: '/processingEvidences', evidences: '/processingEvidences' };

/**
 * The transform engine: a pure function of configuration, keys, request body and caller identity.
 * A call is atomic: checks run in stages (shape 400, identifiers 400, contexts 400/403,
 * authorization 403, fields 422, values 422); the first stage with problems fails the call with
 * every offending element listed by pointer, request guid and instance index, never by value.
 */
export class Engine {
  private readonly config: CompiledConfig;
  private readonly chains: ChainCache;
  private readonly subjects = new SubjectSlot();

  constructor(options: EngineOptions) {
    this.config = options.config;
    const random = options.random ?? pooledRandom();
    this.chains = new ChainCache(options.config, { keys: options.keys, random, subjects: this.subjects, primitives: options.primitives });
  }

  /** What a protect for an erased subject gets (configuration `subjects.returning`): the adapter asks the store accordingly. */
  get returningSubjects(): 'new-key' | 'refuse' {
    return this.config.subjects.returning;
  }

  /**
   * Runs `fn` — bound transforms of bind(), over values of one data subject, without awaiting —
   * with that subject's key from `ring` (fetched by the adapter). Subject-scoped transforms run
   * outside it answer SUBJECT_REQUIRED per value.
   */
  withSubject<T>(subject: string | undefined, ring: SubjectKeyring | undefined, fn: () => T): T {
    return this.subjects.run(subject, ring, fn);
  }

  /** withSubject() for a function that awaits between its transforms (a record's serde asking a schema registry). */
  withSubjectAsync<T>(subject: string | undefined, ring: SubjectKeyring | undefined, fn: () => Promise<T>): Promise<T> {
    return this.subjects.runAsync(subject, ring, fn);
  }

  transform(body: unknown, identity: Identity): TransformResponse {
    return this.execute(this.plan(body, identity));
  }

  plan(body: unknown, identity: Identity): Plan {
    const parsed = transformRequestSchema.safeParse(body);
    if (!parsed.success) {
      throw combine(
        parsed.error.issues.map((i) => ({ code: 'REQUEST_MALFORMED', pointer: pointerOf(i.path), message: `${pointerOf(i.path) || '/'}: ${shapeMessage(i)}` })),
      );
    }
    const request = parsed.data;
    fail(checkIdentifiers(request));
    return this.planChecked(request, identity);
  }

  /**
   * plan() for a body an adapter has already checked for shape and identifiers by the same rules
   * (the HTTP service's one pass, transformBodyChecker): contexts, grants and fields only.
   */
  planChecked(request: TransformRequest, identity: Identity): Plan {
    const contexts = resolveContexts(this.config, request, identity);
    fail(contexts.badRequest);
    fail(contexts.forbidden);

    const forbidden: ErrorDetail[] = [];
    const unprocessable: ErrorDetail[] = [];
    const planned = request.requests.map((r, ri): PlannedRequest => {
      const processing = contexts.processing.get(r.processingContext.toLowerCase())!;
      const rights = contexts.rights.get(r.rightsContext.toLowerCase())!;
      const action = processing.action;
      const subject = contexts.subjects.get(r.processingContext.toLowerCase());
      let reveals = false;
      let scoped: { create: boolean } | undefined;
      // decided once per field of the request: a batch repeats the same few fields many times
      const decided = new Map<string, Map<string, Decision>>();
      const chains = r.instances.map((inst, ii): Chain => {
        // nested maps: a joined key would be a new string to flatten and hash for every instance
        let ofClass = decided.get(inst.className);
        if (ofClass === undefined) decided.set(inst.className, (ofClass = new Map()));
        let outcome = ofClass.get(inst.propertyName);
        if (outcome === undefined) ofClass.set(inst.propertyName, (outcome = this.decide(rights, r.rightsContext, action, inst.className, inst.propertyName)));
        if (outcome.chain && outcome.scoped && subject === undefined) {
          unprocessable.push({ ...subjectRequired(inst), request: r.guid, instance: ii, pointer: `/requests/${ri}/instances/${ii}` });
          return noChain;
        }
        if (outcome.chain) {
          if (outcome.reveals) reveals = true;
          if (outcome.scoped) scoped = { create: (scoped?.create ?? false) || !outcome.reveals };
          return outcome.chain;
        }
        (outcome.code === 'ACTION_NOT_GRANTED' ? forbidden : unprocessable).push({
          ...refusal(outcome),
          request: r.guid,
          instance: ii,
          pointer: `/requests/${ri}/instances/${ii}`,
        });
        return noChain;
      });
      return {
        guid: r.guid,
        index: ri,
        action,
        reveals,
        processingContext: processing.name,
        rightsContexts: rights.names,
        instances: r.instances,
        chains,
        ...(scoped && subject !== undefined ? { subject: { id: subject, create: scoped.create } } : {}),
      };
    });
    fail(forbidden);
    fail(unprocessable);
    return { requests: planned };
  }

  /**
   * Authorizes once a fixed list of fields for a caller and its contexts — what a stream pipeline
   * does at start — and returns their transforms, index-aligned with `fields`. The checks and codes
   * are plan()'s (evidences 400, roles and rights 403, fields 422); refusals point into the
   * BindRequest (`/rightsEvidences/0`, `/fields/1`). Each transform throws ValueError for a value
   * it cannot take.
   */
  bind(request: BindRequest): BoundFields {
    const processing = matchProcessing(this.config, request.processingEvidences, BIND_PROCESSING);
    const rights = matchRights(this.config, request.rightsEvidences, new Set(request.identity.roles), BIND_RIGHTS);
    fail([...processing.badRequest, ...rights.badRequest]);
    fail(rights.forbidden);
    const action = processing.context!.action;
    const forbidden: ErrorDetail[] = [];
    const unprocessable: ErrorDetail[] = [];
    let reveals = false;
    const subjectScoped: boolean[] = [];
    const transforms = request.fields.map((f, i): Chain => {
      const outcome = this.decide(rights.rights!, rights.rights!.names.join(', '), action, f.className, f.propertyName);
      subjectScoped.push(outcome.chain ? outcome.scoped : false);
      if (outcome.chain) {
        if (outcome.reveals) reveals = true;
        return outcome.chain;
      }
      (outcome.code === 'ACTION_NOT_GRANTED' ? forbidden : unprocessable).push({ ...refusal(outcome), pointer: `/fields/${i}` });
      return noChain;
    });
    fail(forbidden);
    fail(unprocessable);
    return { action, reveals, transforms, subjectScoped };
  }

  /**
   * bind() for re-protection after a key rotation: each transform unprotects a value (under the
   * key version its header names) and protects it again (under the primary version). The caller's
   * identity needs both actions on every field: `processingEvidences` must select a Protect
   * context and `unprotectEvidences` an Unprotect one (CONFIG_INVALID otherwise), each checked as
   * bind() checks. Nothing here reveals: cleartext never leaves a transform. `erasedKept`: a value
   * of an erased data subject is carried through unchanged and counted, instead of refused.
   */
  bindRewrap(
    request: BindRequest & { unprotectEvidences: readonly { name: string; value: string }[] },
    options: { erasedKept?: (count: number) => void } = {},
  ): BoundFields {
    const protect = this.bind(request);
    const unprotect = this.bind({ ...request, processingEvidences: request.unprotectEvidences });
    if (protect.action !== PROTECT || unprotect.action !== UNPROTECT) {
      throw new VeilError(
        'CONFIG_INVALID',
        `a re-protection binds a Protect and an Unprotect processing context, not ${protect.action} and ${unprotect.action}`,
      );
    }
    // values of erased data subjects are carried through unchanged (and counted) when the caller asks
    const kept = options.erasedKept;
    const transforms = unprotect.transforms.map((u, i) => {
      const chain = chainThen(u, protect.transforms[i]!);
      return kept && protect.subjectScoped[i] ? keepingErased(chain, kept) : chain;
    });
    return { action: 'Rewrap', reveals: false, transforms, subjectScoped: protect.subjectScoped };
  }

  /** decideField (shared with the role × field view), then the chain for one field. */
  private decide(rights: ResolvedRights, rightsLabel: string, action: string, className: string, propertyName: string): Decision {
    const decision = decideField(this.config, rights, rightsLabel, action, className, propertyName);
    if (!decision.plan) return decision;
    const scoped = this.config.sequences.get(decision.plan.sequence)?.subjectScoped ?? false;
    return { chain: this.chains.chain(decision.field, action, decision.plan), reveals: decision.plan.direction === 'inverse', scoped };
  }

  /**
   * Runs a plan's values. `subjects`: the keys of the data subjects its requests name
   * (PlannedRequest.subject), fetched by the adapter from the subject-key store.
   */
  execute(plan: Plan, subjects?: SubjectKeyring): TransformResponse {
    const problems: ErrorDetail[] = [];
    const responses = plan.requests.map((r) => ({
      request: r.guid,
      instances: this.subjects.run(r.subject?.id, subjects, () => {
        const outputs = runBatched(r.chains, r.instances);
        return r.instances.map((inst, ii) => {
          const out = outputs[ii]!;
          if (!(out instanceof ValueError)) return { className: inst.className, propertyName: inst.propertyName, value: out };
          problems.push({
            code: out.code,
            pointer: `/requests/${r.index}/instances/${ii}/value`,
            request: r.guid,
            instance: ii,
            className: inst.className,
            propertyName: inst.propertyName,
            message: `${inst.className}.${inst.propertyName} value ${out.message}`,
          });
          return inst;
        });
      }),
    }));
    fail(problems);
    return { responses };
  }
}

/**
 * Each instance's output, or the ValueError its chain refused it with: the instances of one chain
 * (one field of the request) run through its batch form together, not one call per value, so a
 * keyed step crosses into the native core once per field and request (issue 42: a call per value
 * costs more there than the cipher).
 */
function runBatched(chains: readonly Chain[], instances: readonly Instance[]): (string | ValueError)[] {
  const groups = new Map<Chain, number[]>();
  chains.forEach((chain, ii) => {
    const group = groups.get(chain);
    if (group) group.push(ii);
    else groups.set(chain, [ii]);
  });
  const outputs = new Array<string | ValueError>(instances.length);
  for (const [chain, at] of groups) {
    const results = at.length === 1 ? [oneOf(chain, instances[at[0]!]!.value)] : chain.many(at.map((ii) => instances[ii]!.value));
    at.forEach((ii, k) => (outputs[ii] = results[k]!));
  }
  return outputs;
}

function oneOf(chain: Chain, value: string): string | ValueError {
  try {
    return chain(value);
  } catch (e) {
    if (!(e instanceof ValueError)) throw e;
    return e;
  }
}

/**
 * zod's message, except that unknown field names are echoed only when they look like field names:
 * a client that puts values into keys must not get them back in an error (or a log).
 */
function shapeMessage(issue: { code: string; message: string; keys?: string[] }): string {
  if (issue.code !== 'unrecognized_keys') return issue.message;
  const keys = issue.keys ?? [];
  const shown = keys.filter((k) => /^[A-Za-z][A-Za-z0-9_]{0,31}$/.test(k));
  const names = shown.map((k) => `"${k}"`).join(', ');
  const hidden = keys.length - shown.length;
  const parts = [...(names ? [names] : []), ...(hidden ? [`${hidden} whose name${hidden === 1 ? ' is' : 's are'} not shown`] : [])];
  return `unrecognized field${keys.length === 1 ? '' : 's'}: ${parts.join(' and ')}`;
}

function subjectRequired(inst: { className: string; propertyName: string }): Omit<ErrorDetail, 'pointer'> {
  return {
    className: inst.className,
    propertyName: inst.propertyName,
    code: 'SUBJECT_REQUIRED',
    message: `${inst.className}.${inst.propertyName} is protected under a key scoped to the data subject: name the subject with a Subject evidence of the processing context`,
  };
}

/** A refused Decision as the start of an ErrorDetail (same keys in the same order). */
function refusal(d: Exclude<Decision, { chain: Chain }>): Omit<ErrorDetail, 'pointer'> {
  return { className: d.className, propertyName: d.propertyName, code: d.code, message: d.message };
}

const noChain: Chain = Object.assign(
  () => {
    throw new Error('unreachable: a planned call with problems never executes');
  },
  {
    many(): never {
      throw new Error('unreachable: a planned call with problems never executes');
    },
  },
);

function fail(details: readonly ErrorDetail[]): void {
  if (details.length) throw combine(details);
}

export type { Chain };
