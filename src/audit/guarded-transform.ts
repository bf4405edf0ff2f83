import { VeilError, type Engine, type Identity, type Plan, type SubjectKeyring, type TransformRequest, type TransformResponse } from '../engine/index.ts';
import { auditEvent, type AuditCaller } from './audit-event.ts';
import type { AuditChannel, AuditEvent, AuditSink } from './audit-sink.ts';
import { AuditError } from './errors.ts';

/** A verified caller: its roles for the engine, its names for the audit record. */
export type GuardedCaller = Identity & AuditCaller;

/**
 * Which calls leave an audit record.
 * - `revealing`: every call that reveals cleartext (some action runs a sequence inverted), whatever
 *   its outcome once planned, and every denied call (401/403). The HTTP API: Protect calls are not
 *   audited, and keep working while the sink is down.
 * - `every`: every call, whatever its outcome. The Kafka unprotect responder.
 */
export type AuditScope = 'revealing' | 'every';

export interface GuardDeps {
  engine: Engine;
  audit: AuditSink;
  now: () => Date;
  /** the adapter the calls arrive through: http, kafka, … */
  channel: AuditChannel;
  scope: AuditScope;
  /**
   * the keys of the data subjects a plan names (subject-scoped keys, issue 29), fetched from the
   * subject-key store (src/subjects fetchSubjectKeys); absent: such calls fail with KEY_UNAVAILABLE
   */
  subjectKeys?: (needs: Iterable<{ id: string; create: boolean } | undefined>, returning: 'new-key' | 'refuse') => Promise<SubjectKeyring | undefined>;
}

/** One call as an adapter hands it over; its steps throw VeilErrors to refuse the call. */
export interface GuardedCall {
  /** names the call in its audit record (HTTP request id, Kafka correlation id) */
  requestId: string;
  /** the body as received, when the adapter has one before authenticating: refusals count its instances */
  body?: unknown;
  /** the adapter's checks before the caller is known (content type, deadline), then authentication (401) */
  authenticate(): Promise<GuardedCaller>;
  /**
   * the adapter's checks once the caller is known (rate limit, size limits, parsing): the body to
   * plan, or `{ checked }` when the adapter already checked its shape and identifiers
   */
  admit(caller: GuardedCaller): unknown;
  /** admit returns `{ checked: TransformRequest }`: the engine skips the shape and identifier checks */
  checked?: boolean;
  /**
   * admit returns `{ planned: Plan }`: the plan of an earlier call of this guard for the same
   * caller's roles and the same contexts and fields (an outcome's `plan`), with this call's
   * instances — authorization decides on roles, contexts and fields, never on values. For an
   * adapter that repeats one shape of call (the gateway: a route's fields for a caller's roles).
   */
  planned?: boolean;
  /** where a refused call whose audit record could not be written is reported (the call stays refused) */
  warn(message: string): void;
}

export type GuardedOutcome =
  | { ok: true; response: TransformResponse; plan: Plan }
  /** `unexpected`: a non-VeilError thrown on the way, refused as INTERNAL; the adapter logs its type, never its message */
  | { ok: false; error: VeilError; unexpected?: unknown };

/**
 * The rule "audit before any cleartext leaves", once for every channel. A call runs: the
 * adapter's checks and authentication → plan (authorization, fields) → execute (values computed,
 * held back) → the audit record of the outcome → the values. Fail-closed: when the record of a
 * call in scope cannot be written, the call is refused with AUDIT_UNAVAILABLE (503) and no value
 * is returned. Refused calls in scope are recorded best-effort (denied for 401/403, else failed):
 * the call is refused whether or not its record is written. Records never hold a value.
 */
export class GuardedTransform {
  private readonly deps: GuardDeps;

  constructor(deps: GuardDeps) {
    this.deps = deps;
  }

  async run(call: GuardedCall): Promise<GuardedOutcome> {
    let caller: GuardedCaller | undefined;
    let body = call.body;
    let plan: Plan | undefined;
    try {
      caller = await call.authenticate();
      const admitted = await call.admit(caller);
      if (call.planned) {
        plan = (admitted as { planned: Plan }).planned;
      } else if (call.checked) {
        body = (admitted as { checked: TransformRequest }).checked;
        plan = this.deps.engine.planChecked(body as TransformRequest, caller);
      } else {
        body = admitted;
        plan = this.deps.engine.plan(body, caller);
      }
      // a call that names no data subject (most) neither awaits nor allocates for them
      const subjects =
        this.deps.subjectKeys && plan.requests.some((r) => r.subject !== undefined)
          ? await this.deps.subjectKeys(
              plan.requests.map((r) => r.subject),
              this.deps.engine.returningSubjects,
            )
          : undefined;
      const response = this.deps.engine.execute(plan, subjects);
      if (this.inScope(plan)) {
        try {
          await this.record(call.requestId, { caller, plan, outcome: 'ok' });
        } catch {
          // no record, no values; an AUDIT_UNAVAILABLE refusal is not recorded either
          return {
            ok: false,
            error: new AuditError(
              'AUDIT_UNAVAILABLE',
              `the audit sink cannot record this ${this.deps.scope === 'revealing' ? 'unprotect' : 'request'}, so it was refused`,
            ),
          };
        }
      }
      return { ok: true, response, plan };
    } catch (e) {
      const error = e instanceof VeilError ? e : new VeilError('INTERNAL', 'an unexpected error; nothing was transformed', [], { cause: e });
      const outcome = error.status === 401 || error.status === 403 ? 'denied' : 'failed';
      if (outcome === 'denied' || this.inScope(plan)) {
        await this.record(call.requestId, { caller, plan, outcome, code: error.code, body }).catch(() =>
          call.warn(`audit sink failed to record a ${outcome} call`),
        );
      }
      return e instanceof VeilError ? { ok: false, error } : { ok: false, error, unexpected: e };
    }
  }

  /** Whether a call (planned, or refused before planning) must be recorded. */
  private inScope(plan: Plan | undefined): boolean {
    return this.deps.scope === 'every' || (plan !== undefined && plan.requests.some((r) => r.reveals));
  }

  private record(
    requestId: string,
    e: { caller: GuardedCaller | undefined; plan: Plan | undefined; outcome: AuditEvent['outcome']; code?: string; body?: unknown },
  ): Promise<void> {
    return this.deps.audit.record(
      auditEvent({
        requestId,
        channel: this.deps.channel,
        now: this.deps.now(),
        outcome: e.outcome,
        ...(e.caller ? { caller: e.caller } : {}),
        ...(e.plan ? { plan: e.plan } : {}),
        ...(e.code ? { code: e.code } : {}),
        ...(e.body !== undefined ? { body: e.body } : {}),
      }),
    );
  }
}
