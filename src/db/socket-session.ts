import { auditEvent } from '../audit/index.ts';
import type { AuditChannel, AuditSink } from '../audit/index.ts';
import { GuardedTransform } from '../audit/index.ts';
import { VeilError, type Engine, type TransformRequest } from '../engine/index.ts';
import { RateLimitedError, tokenExpired, tokenInvalid, tokenMissing } from '../identity/errors.ts';
import { RateLimiter, type BearerVerifier, type Caller } from '../identity/index.ts';
import { subjectKeysOf, type SubjectKeyStore } from '../subjects/index.ts';
import { DbError, DbFault } from './errors.ts';
import type { LeaseFrame } from './lease-frames.ts';
import { LeaseDesk, type LeaseSettings } from './socket-leases.ts';
import { authOkFrame, errorFrame, parseClientFrame, valuesFrame, type ErrorReply, type ProtectItem } from './socket-frames.ts';
import { framePosition, frameValues, socketCall, valuePointer, type SocketCall } from './socket-request.ts';

/** What the database socket needs of veil serve: the same engine, tokens, audit and limits as POST /transform. */
export interface DbSocketDeps {
  /** read once per call: a publish in the admin portal swaps it for later calls */
  engine: () => Engine;
  verifier: BearerVerifier;
  audit: AuditSink;
  now: () => Date;
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  /** service.limits: frame size (bodyBytes), values per call, characters per value */
  limits: { bodyBytes: number; instancesPerCall: number; valueLength: number };
  /** service.rateLimit: calls per second per client, as POST /transform counts them */
  rateLimit: { transformPerSecond: number; transformBurst: number };
  /** the subject-key store: keys of subject-scoped sequences (PROTECT_SUBJECTS names each value's subject) */
  subjects?: SubjectKeyStore;
  /** VEIL_DB_SOCKET_LEASES=on: keys leased to the database (docs/database.md, "Leased keys"); absent: none */
  leases?: LeaseSettings;
}

/** One reply, and whether the connection ends after it (a frame that broke the grammar, a refused token). */
export interface Answer {
  reply: Buffer;
  close: boolean;
}

/** a verified token is verified again at least this often while a connection lasts */
const RECHECK_MS = 60_000;
/**
 * The audit channel of calls over the socket. AuditChannel has no name for it yet (src/audit);
 * until it does, records say `http` and their requestId starts with `db-socket:`.
 */
const CHANNEL: AuditChannel = 'http';

/** The calls of every connection: one rate limiter per client, one guarded transform per engine. */
export class SocketSessions {
  private readonly deps: DbSocketDeps;
  private readonly limiter: RateLimiter;
  private readonly guards = new WeakMap<Engine, GuardedTransform>();
  private readonly subjectKeys: ReturnType<typeof subjectKeysOf>;

  constructor(deps: DbSocketDeps) {
    this.deps = deps;
    this.limiter = new RateLimiter({ rate: deps.rateLimit.transformPerSecond, burst: deps.rateLimit.transformBurst, now: () => deps.now().getTime() });
    this.subjectKeys = subjectKeysOf(deps.subjects);
  }

  open(connection: number): Session {
    return new Session(this, connection);
  }

  get dependencies(): DbSocketDeps {
    return this.deps;
  }

  take(clientId: string, cost = 1): number {
    return this.limiter.take(clientId, cost);
  }

  guard(): GuardedTransform {
    const engine = this.deps.engine();
    let guard = this.guards.get(engine);
    if (!guard)
      this.guards.set(
        engine,
        (guard = new GuardedTransform({ engine, audit: this.deps.audit, now: this.deps.now, channel: CHANNEL, scope: 'revealing', ...this.subjectKeys })),
      );
    return guard;
  }
}

/**
 * One connection's state: the token it authenticated with, verified once and again when it
 * expires or every minute; then PROTECT calls through the guarded transform, the rate limit and
 * the limits of POST /transform. Replies carry codes, titles and pointers, never a value.
 */
export class Session {
  private readonly sessions: SocketSessions;
  private readonly connection: number;
  private caller: Caller | undefined;
  private token = '';
  private checkUntil = 0;
  private calls = 0;
  private desk: LeaseDesk | undefined;

  constructor(sessions: SocketSessions, connection: number) {
    this.sessions = sessions;
    this.connection = connection;
  }

  get authenticated(): boolean {
    return this.caller !== undefined;
  }

  async handle(payload: Buffer): Promise<Answer> {
    const { limits } = this.sessions.dependencies;
    let frame;
    try {
      frame = parseClientFrame(payload, limits.instancesPerCall);
    } catch (e) {
      if (!(e instanceof DbFault && e.code === 'FRAME_MALFORMED')) throw e;
      // the title says which rule the frame broke: fixed text, never a byte of the frame
      return { reply: errorFrame(frameRefusal('REQUEST_MALFORMED', `malformed frame: ${e.message}`)), close: true };
    }
    const requestId = `db-socket:${this.connection}.${++this.calls}`;
    if (frame.op === 'auth') return this.authenticate(frame.token, requestId);
    if (frame.op === 'lease' || frame.op === 'lease-audit') return this.leased(frame, requestId);
    return this.protect(frame.role, frame.items, requestId);
  }

  private async authenticate(token: string, requestId: string): Promise<Answer> {
    const deps = this.sessions.dependencies;
    this.caller = undefined;
    try {
      this.caller = await deps.verifier.verifyHeader(`Bearer ${token}`);
    } catch (e) {
      const error = e instanceof VeilError ? e : tokenInvalid('unverifiable');
      await deps.audit
        .record(auditEvent({ requestId, channel: CHANNEL, now: deps.now(), outcome: 'denied', code: error.code }))
        .catch(() => deps.log.warn({ code: error.code }, 'db socket: audit sink failed to record a denied call'));
      return refuse(error, true);
    }
    this.token = token;
    const now = deps.now().getTime();
    this.checkUntil = now + RECHECK_MS;
    return { reply: authOkFrame(this.caller.expiresAt - now / 1000), close: false };
  }

  /** The caller, verified again every minute; once its token expires, refused (here without clock tolerance). */
  private async current(): Promise<Caller> {
    const deps = this.sessions.dependencies;
    if (!this.caller) throw tokenMissing();
    const now = deps.now().getTime();
    if (now >= this.caller.expiresAt * 1000) {
      this.caller = undefined;
      throw tokenExpired();
    }
    if (now < this.checkUntil) return this.caller;
    this.caller = undefined;
    const caller = await deps.verifier.verifyHeader(`Bearer ${this.token}`);
    this.caller = caller;
    this.checkUntil = now + RECHECK_MS;
    return this.current();
  }

  /**
   * LEASE and LEASE_AUDIT (socket-leases.ts), for an authenticated caller. With leases off, a
   * LEASE is answered DB_LEASE_UNAVAILABLE (the backend keeps the round trip) and a report
   * DB_LEASE_INVALID. A report refused closes the connection: its leases end with it.
   */
  private async leased(frame: LeaseFrame, requestId: string): Promise<Answer> {
    const deps = this.sessions.dependencies;
    if (!deps.leases)
      return refuse(
        new DbError(frame.op === 'lease' ? 'DB_LEASE_UNAVAILABLE' : 'DB_LEASE_INVALID', 'leases are off (VEIL_DB_SOCKET_LEASES)'),
        frame.op !== 'lease',
      );
    let caller: Caller;
    try {
      caller = await this.current();
    } catch (e) {
      const error = e instanceof VeilError ? e : tokenInvalid('unverifiable');
      await deps.audit
        .record(auditEvent({ requestId, channel: CHANNEL, now: deps.now(), outcome: 'denied', code: error.code }))
        .catch(() => deps.log.warn({ code: error.code }, 'db socket: audit sink failed to record a denied call'));
      return refuse(error, false);
    }
    this.desk ??= new LeaseDesk({
      settings: deps.leases,
      audit: deps.audit,
      channel: CHANNEL,
      now: deps.now,
      take: (id, cost) => this.sessions.take(id, cost),
      burst: deps.rateLimit.transformBurst,
      valueLength: deps.limits.valueLength,
    });
    try {
      return { reply: frame.op === 'lease' ? await this.desk.grant(caller, frame, requestId) : await this.desk.report(caller, frame, requestId), close: false };
    } catch (e) {
      if (!(e instanceof VeilError)) throw e;
      return refuse(e, e.code === 'DB_LEASE_INVALID');
    }
  }

  private async protect(role: string, items: ProtectItem[], requestId: string): Promise<Answer> {
    const deps = this.sessions.dependencies;
    const call = socketCall(role, items);
    const request: TransformRequest = call.request;
    const outcome = await this.sessions.guard().run({
      requestId,
      body: request,
      authenticate: () => this.current(),
      admit: (caller) => {
        const wait = this.sessions.take(caller.clientId);
        if (wait > 0) throw new RateLimitedError('too many calls for this client', Math.ceil(wait));
        checkValueLengths(call, items, deps.limits.valueLength);
        return { checked: request };
      },
      checked: true,
      warn: (message) => deps.log.warn({ requestId }, message),
    });
    if (outcome.ok) return { reply: valuesFrame(frameValues(call, outcome.response)), close: false };
    if ('unexpected' in outcome) {
      const e = outcome.unexpected as Error | undefined;
      deps.log.error(
        {
          errorType: e?.name,
          frames: String(e?.stack ?? '')
            .split('\n')
            .slice(1, 8),
        },
        'db socket: unexpected error',
      );
    }
    return refuse(outcome.error, false, call);
  }
}

/** VALUE_TOO_LONG as POST /transform answers it: each value over the limit, by instance, never the value. */
function checkValueLengths(call: SocketCall, items: readonly ProtectItem[], max: number): void {
  const tooLong = [];
  for (let i = 0; i < items.length && tooLong.length < 100; i++) {
    if (items[i]!.value.length > max) {
      tooLong.push({ code: 'VALUE_TOO_LONG' as const, ...valuePointer(call, i), message: `longer than the limit of ${max} characters` });
    }
  }
  if (tooLong.length) throw new VeilError('VALUE_TOO_LONG', `${tooLong.length} value(s) longer than the limit of ${max} characters`, tooLong);
}

/**
 * An error reply from a VeilError: its title (never its message, which may say more), pointer,
 * instances — their positions in the frame (`call`: the frame's values were grouped by subject).
 */
export function refuse(error: VeilError, close: boolean, call?: SocketCall): Answer {
  const at = (d: VeilError['details'][number]) => (call ? framePosition(call, d) : typeof d.instance === 'number' ? d.instance : undefined);
  const reply: ErrorReply = {
    code: error.code,
    status: error.status,
    retriable: error.retriable,
    title: titleOf(error),
    instances: error.details.flatMap((d) => {
      const i = at(d);
      return i === undefined ? [] : [i];
    }),
    ...(error.details[0] ? { pointer: error.details[0].pointer } : {}),
    ...(error instanceof RateLimitedError ? { retryAfterSeconds: error.retryAfter } : {}),
  };
  return { reply: errorFrame(reply), close };
}

/** The catalog's title a VeilError carries; the message (never a value either) where it carries none. */
function titleOf(error: VeilError): string {
  const title = (error as VeilError & { title?: unknown }).title;
  return typeof title === 'string' ? title : error.message;
}

/** What the socket itself refuses (a frame, not a call), with the catalog's status of each code. */
const FRAME_REFUSALS = {
  REQUEST_MALFORMED: 400,
  BODY_TOO_LARGE: 413,
  REQUEST_TIMEOUT: 408,
  TOKEN_MISSING: 401,
  INTERNAL: 500,
} as const;

export function frameRefusal(code: keyof typeof FRAME_REFUSALS, title: string): ErrorReply {
  return { code, status: FRAME_REFUSALS[code], retriable: code === 'INTERNAL', title };
}
