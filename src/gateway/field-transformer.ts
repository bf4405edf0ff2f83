import type { GuardedCaller, GuardedTransform } from '../audit/index.ts';
import { VeilError, type Engine, type FieldRef, type Plan, type TransformRequest } from '../engine/index.ts';

/** What the caller sees of a response value: its text and the action that made it (Unprotect, or the ifDenied action). */
export interface Shown {
  text: string;
  action: string;
}

/** One selected value and the field it belongs to. */
export interface FieldValue {
  field: FieldRef;
  value: string;
}

/** A response value to reveal; `ifDenied` names the action to run instead when Unprotect is not granted (e.g. Mask). */
export interface RevealValue extends FieldValue {
  ifDenied?: string;
}

export interface FieldTransformerOptions {
  engine: Engine;
  /** the one audit-before-cleartext rule; channel `gateway`, scope `revealing` */
  guard: GuardedTransform;
  actions: { protect: string; unprotect: string };
  warn: (message: string) => void;
}

const RIGHTS = '00000000-0000-4000-8000-000000000001';
const processingGuid = (i: number) => `00000000-0000-4000-8001-${String(i).padStart(12, '0')}`;
const requestGuid = (i: number) => `00000000-0000-4000-8002-${String(i).padStart(12, '0')}`;
const MAX_DECISIONS = 10_000;
/** plans kept: a route's field sequences by the callers' role sets; beyond it the cache starts anew */
const MAX_PLANS = 1_000;

type Group = { action: string; values: readonly FieldValue[] };

/**
 * The gateway's use of the engine: whole-body protection that succeeds or refuses, and per-field
 * reveal that never fails a response for a field the caller may not see. Both run through the
 * GuardedTransform, so every reveal is audited before a cleartext value is returned.
 */
export class FieldTransformer {
  private readonly options: FieldTransformerOptions;
  /** roles + field + action → granted; the configuration is fixed for the process */
  private readonly decisions = new Map<string, boolean>();
  /**
   * roles + each group's action and fields → the plan of the first such call: the engine's plan
   * (contexts resolved, each field authorized) depends on those alone, and a route sends the same
   * fields on every exchange. The configuration is fixed for this transformer (a new version
   * builds a new one).
   */
  private readonly plans = new Map<string, Plan>();

  constructor(options: FieldTransformerOptions) {
    this.options = options;
  }

  /**
   * Protects every value or throws the engine's VeilError (its details point at
   * `/requests/0/instances/<i>`: `i` is the index into `values`). Nothing is returned in part.
   */
  async protect(requestId: string, caller: GuardedCaller, values: readonly FieldValue[]): Promise<string[]> {
    if (values.length === 0) return [];
    const outcome = await this.run(requestId, caller, rolesKey(caller), [{ action: this.options.actions.protect, values }]);
    if (!outcome.ok) throw outcome.error;
    return outcome.response.responses[0]!.instances.map((i) => i.value);
  }

  /**
   * What the caller sees of each value: the cleartext where its roles may unprotect the field, the
   * `ifDenied` action's output where they may run that instead, and undefined (the value stays as
   * it is) otherwise — also for a value the engine refuses (not a protected value of that field).
   * Throws only for failures of the service itself (AUDIT_UNAVAILABLE, KEY_UNAVAILABLE, INTERNAL).
   */
  async reveal(requestId: string, caller: GuardedCaller, values: readonly RevealValue[]): Promise<(Shown | undefined)[]> {
    const out: (Shown | undefined)[] = values.map(() => undefined);
    const byAction = new Map<string, number[]>();
    // the roles' part of the decision key, once per body rather than once per value
    const roles = rolesKey(caller);
    values.forEach((v, i) => {
      const action = this.actionFor(caller, roles, v);
      if (action === undefined) return;
      let list = byAction.get(action);
      if (!list) byAction.set(action, (list = []));
      list.push(i);
    });
    let groups = [...byAction].map(([action, indexes]) => ({ action, indexes }));
    // one call, audited once; values the engine refuses stay in place and the rest is tried again
    for (let attempt = 0; attempt < 2 && groups.length > 0; attempt++) {
      const outcome = await this.run(
        requestId,
        caller,
        roles,
        groups.map((g) => ({ action: g.action, values: g.indexes.map((i) => values[i]!) })),
      );
      if (outcome.ok) {
        outcome.response.responses.forEach((r, ri) =>
          r.instances.forEach((inst, ii) => (out[groups[ri]!.indexes[ii]!] = { text: inst.value, action: groups[ri]!.action })),
        );
        return out;
      }
      const error = outcome.error;
      if (error.status >= 500) throw error;
      if (error.status !== 422 || attempt === 1) {
        this.options.warn(`reveal refused (${error.code}); the values stay protected`);
        return out;
      }
      const refused = new Set(error.details.filter((d) => d.instance !== undefined).map((d) => `${d.request}\0${d.instance}`));
      groups = groups
        .map((g, ri) => ({ action: g.action, indexes: g.indexes.filter((_, ii) => !refused.has(`${requestGuid(ri)}\0${ii}`)) }))
        .filter((g) => g.indexes.length > 0);
    }
    return out;
  }

  /** Records a call refused before any transform (a bad or missing token) as the HTTP API does. */
  async refuse(requestId: string, error: VeilError): Promise<void> {
    await this.options.guard.run({
      requestId,
      authenticate: async () => {
        throw error;
      },
      admit: () => undefined,
      warn: this.options.warn,
    });
  }

  /** One guarded call; planned by the engine the first time its roles, actions and fields are seen. */
  private async run(requestId: string, caller: GuardedCaller, roles: string, groups: readonly Group[]) {
    const key = planKey(roles, groups);
    const known = this.plans.get(key);
    if (known) {
      const planned: Plan = { requests: known.requests.map((r, i) => ({ ...r, instances: instancesOf(groups[i]!.values) })) };
      return this.options.guard.run({ requestId, authenticate: async () => caller, admit: () => ({ planned }), planned: true, warn: this.options.warn });
    }
    const body = this.body(caller, groups);
    const outcome = await this.options.guard.run({
      requestId,
      authenticate: async () => caller,
      // built here from configured fields and fresh guids: the shape and identifier checks hold by construction
      admit: () => ({ checked: body }),
      checked: true,
      warn: this.options.warn,
    });
    // a plan naming a data subject is the subject's: never reused
    if (outcome.ok && outcome.plan.requests.every((r) => r.subject === undefined)) {
      if (this.plans.size >= MAX_PLANS) this.plans.clear();
      // kept without the call's values: a cache holds no cleartext
      this.plans.set(key, { requests: outcome.plan.requests.map((r) => ({ ...r, instances: [] })) });
    }
    return outcome;
  }

  private actionFor(caller: GuardedCaller, roles: string, v: RevealValue): string | undefined {
    if (this.granted(caller, roles, v.field, this.options.actions.unprotect)) return this.options.actions.unprotect;
    if (v.ifDenied !== undefined && this.granted(caller, roles, v.field, v.ifDenied)) return v.ifDenied;
    return undefined;
  }

  /** Whether the caller's roles (`roles`: rolesKey(caller)) may run `action` on `field`: the engine's own authorization, without values. */
  private granted(caller: GuardedCaller, roles: string, field: FieldRef, action: string): boolean {
    const key = `${roles}\u0001${field.className}.${field.propertyName}\u0001${action}`;
    let decision = this.decisions.get(key);
    if (decision === undefined) {
      try {
        this.options.engine.bind({
          identity: caller,
          rightsEvidences: roleEvidences(caller),
          processingEvidences: [{ name: 'Action', value: action }],
          fields: [field],
        });
        decision = true;
      } catch (e) {
        if (!(e instanceof VeilError)) throw e;
        decision = false;
      }
      if (this.decisions.size >= MAX_DECISIONS) this.decisions.clear();
      this.decisions.set(key, decision);
    }
    return decision;
  }

  /** A transform request: one rights context holding the caller's roles, one request per action. */
  private body(caller: GuardedCaller, groups: readonly Group[]): TransformRequest {
    return {
      rightsContexts: [{ guid: RIGHTS, evidences: roleEvidences(caller) }],
      processingContexts: groups.map((g, i) => ({ guid: processingGuid(i), evidences: [{ name: 'Action', value: g.action }] })),
      requests: groups.map((g, i) => ({ guid: requestGuid(i), rightsContext: RIGHTS, processingContext: processingGuid(i), instances: instancesOf(g.values) })),
    };
  }
}

function instancesOf(values: readonly FieldValue[]): { className: string; propertyName: string; value: string }[] {
  return values.map((v) => ({ className: v.field.className, propertyName: v.field.propertyName, value: v.value }));
}

/** What a call's plan depends on: the roles, and each group's action and fields in order. */
function planKey(roles: string, groups: readonly Group[]): string {
  let key = roles;
  for (const g of groups) {
    key += `\u0002${g.action}`;
    for (const v of g.values) key += `\u0001${v.field.className}.${v.field.propertyName}`;
  }
  return key;
}

/**
 * The caller's roles as one decision-key part: sorted, so the same roles in any order share
 * decisions; as JSON, so no role's text (an external IdP's group name) can read as two roles.
 */
function rolesKey(caller: GuardedCaller): string {
  return JSON.stringify([...caller.roles].sort());
}

/** One Role evidence per role the caller holds: every configured rights context it qualifies for matches. */
function roleEvidences(caller: GuardedCaller): { name: string; value: string }[] {
  return caller.roles.map((value) => ({ name: 'Role', value }));
}
