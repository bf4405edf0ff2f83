import { pooledRandom } from './crypto/random-pool.ts';
import { ChainCache, type Chain } from './chains.ts';
import type { CompiledConfig } from './config/compiled.ts';
import { combine, ValueError, VeilError, type ErrorDetail } from './errors.ts';
import type { KeyProvider } from './key-access/key-provider.ts';
import { resolveContexts } from './contexts.ts';
import { checkIdentifiers } from './identifiers.ts';
import { transformRequestSchema, type Instance, type TransformResponse } from './request/schema.ts';
import { pointerOf } from './config/issues.ts';

/** Who is calling: the roles its credentials grant (a Role evidence counts only if held). */
export interface Identity {
  subject?: string;
  roles: readonly string[];
}

export interface EngineOptions {
  config: CompiledConfig;
  keys: KeyProvider;
  /** secure random source; injectable so tests can pin AES-GCM nonces */
  random?: (bytes: Uint8Array) => Uint8Array;
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
}

export interface Plan {
  requests: readonly PlannedRequest[];
}

/**
 * The transform engine: a pure function of configuration, keys, request body and caller identity.
 * A call is atomic: checks run in stages (shape 400, identifiers 400, contexts 400/403,
 * authorization 403, fields 422, values 422); the first stage with problems fails the call with
 * every offending element listed by pointer, request guid and instance index, never by value.
 */
export class Engine {
  private readonly config: CompiledConfig;
  private readonly chains: ChainCache;

  constructor(options: EngineOptions) {
    this.config = options.config;
    const random = options.random ?? pooledRandom();
    this.chains = new ChainCache(options.config, { keys: options.keys, random });
  }

  transform(body: unknown, identity: Identity): TransformResponse {
    return this.execute(this.plan(body, identity));
  }

  plan(body: unknown, identity: Identity): Plan {
    const parsed = transformRequestSchema.safeParse(body);
    if (!parsed.success) {
      throw combine(parsed.error.issues.map((i) => ({ code: 'REQUEST_MALFORMED', pointer: pointerOf(i.path), message: `${pointerOf(i.path) || '/'}: ${shapeMessage(i)}` })));
    }
    const request = parsed.data;
    fail(checkIdentifiers(request));
    const contexts = resolveContexts(this.config, request, identity);
    fail(contexts.badRequest);
    fail(contexts.forbidden);

    const forbidden: ErrorDetail[] = [];
    const unprocessable: ErrorDetail[] = [];
    const planned = request.requests.map((r, ri): PlannedRequest => {
      const processing = contexts.processing.get(r.processingContext.toLowerCase())!;
      const rights = contexts.rights.get(r.rightsContext.toLowerCase())!;
      const action = processing.action;
      let reveals = false;
      // decided once per field of the request: a batch repeats the same few fields many times
      const decided = new Map<string, Chain | Omit<ErrorDetail, 'pointer' | 'request' | 'instance'>>();
      const decide = (className: string, propertyName: string): Chain | Omit<ErrorDetail, 'pointer' | 'request' | 'instance'> => {
        const name = `${className}.${propertyName}`;
        const fieldOf = { className, propertyName };
        if (!rights.grants(action, className, propertyName)) {
          return { ...fieldOf, code: 'ACTION_NOT_GRANTED', message: `${action} on ${name} is not granted to rights context ${r.rightsContext}` };
        }
        const field = this.config.classes.get(className)?.get(propertyName);
        if (!field) return { ...fieldOf, code: 'FIELD_UNKNOWN', message: `${name} is not a configured class.property` };
        const plan = field.actions.get(action);
        if (!plan) return { ...fieldOf, code: 'ACTION_NOT_CONFIGURED', message: `${name} has no sequence for ${action}` };
        if (plan.direction === 'inverse') reveals = true;
        return this.chains.chain(field, action, plan);
      };
      const chains = r.instances.map((inst, ii): Chain => {
        const key = `${inst.className}\0${inst.propertyName}`;
        let outcome = decided.get(key);
        if (outcome === undefined) decided.set(key, (outcome = decide(inst.className, inst.propertyName)));
        if (typeof outcome === 'function') return outcome;
        (outcome.code === 'ACTION_NOT_GRANTED' ? forbidden : unprocessable).push({ ...outcome, request: r.guid, instance: ii, pointer: `/requests/${ri}/instances/${ii}` });
        return noChain;
      });
      return { guid: r.guid, index: ri, action, reveals, processingContext: processing.name, rightsContexts: rights.names, instances: r.instances, chains };
    });
    fail(forbidden);
    fail(unprocessable);
    return { requests: planned };
  }

  /**
   * Authorizes once a fixed list of fields for a caller and its contexts — what a stream pipeline
   * does at start — and returns their transforms, index-aligned with `fields`. Refusals are the
   * VeilErrors of plan(); each transform throws ValueError for a value it cannot take.
   */
  bindFields(options: {
    identity: Identity;
    rightsEvidences: readonly { name: string; value: string }[];
    processingEvidences: readonly { name: string; value: string }[];
    fields: readonly { className: string; propertyName: string }[];
  }): { action: string; reveals: boolean; transforms: readonly Chain[] } {
    const [rc, pc, rq] = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000003'];
    const plan = this.plan({
      rightsContexts: [{ guid: rc, evidences: [...options.rightsEvidences] }],
      processingContexts: [{ guid: pc, evidences: [...options.processingEvidences] }],
      requests: [{ guid: rq, rightsContext: rc, processingContext: pc, instances: options.fields.map((f) => ({ ...f, value: '' })) }],
    }, options.identity);
    const r = plan.requests[0]!;
    return { action: r.action, reveals: r.reveals, transforms: r.chains };
  }

  execute(plan: Plan): TransformResponse {
    const problems: ErrorDetail[] = [];
    const responses = plan.requests.map((r) => ({
      request: r.guid,
      instances: r.instances.map((inst, ii) => {
        try {
          return { className: inst.className, propertyName: inst.propertyName, value: r.chains[ii]!(inst.value) };
        } catch (e) {
          if (!(e instanceof ValueError)) throw e;
          problems.push({
            code: e.code, pointer: `/requests/${r.index}/instances/${ii}/value`, request: r.guid, instance: ii,
            className: inst.className, propertyName: inst.propertyName,
            message: `${inst.className}.${inst.propertyName} value ${e.message}`,
          });
          return inst;
        }
      }),
    }));
    fail(problems);
    return { responses };
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

const noChain: Chain = () => {
  throw new Error('unreachable: a planned call with problems never executes');
};

function fail(details: readonly ErrorDetail[]): void {
  if (details.length) throw combine(details);
}

export { VeilError };
export type { Chain };
