import { randomUUID } from 'node:crypto';
import type { AuditChannel, AuditEvent, AuditSink } from '../audit/index.ts';
import { AuditError } from '../audit/errors.ts';
import { VeilError, type KeyProvider } from '../engine/index.ts';
import type { Caller } from '../identity/index.ts';
import { RateLimitedError } from '../identity/errors.ts';
import { DbError } from './errors.ts';
import { leaseTerms, protectVersion, type LeaseSource } from './lease-grant.ts';
import { auditedFrame, leaseGrantFrame, type LeaseFrame } from './lease-frames.ts';

/** VEIL_DB_SOCKET_LEASES=on: what veil serve hands the socket so that it may lease keys (docs/database.md, "Leased keys"). */
export interface LeaseSettings {
  /** how long a lease lives at most (VEIL_DB_SOCKET_LEASE_SECONDS) */
  ttlMs: number;
  /** the most values one lease covers (VEIL_DB_SOCKET_LEASE_VALUES); leases of a field start at 16 and double */
  maxBudget: number;
  /** the engine and its compiled configuration, read together for each lease */
  source: () => LeaseSource;
  keys: KeyProvider;
}

/** What the desk needs of its session: the verified caller, the client's rate limit, the audit. */
export interface LeaseDeskDeps {
  settings: LeaseSettings;
  audit: AuditSink;
  channel: AuditChannel;
  now: () => Date;
  /** takes `cost` calls of the client's socket bucket; seconds to wait when they are not there */
  take: (clientId: string, cost: number) => number;
  /** service.rateLimit.transformBurst: no lease covers more than the bucket can hold */
  burst: number;
  /** service.limits.valueLength: longer values go the round trip, which refuses them */
  valueLength: number;
}

interface HeldLease {
  className: string;
  propertyName: string;
  source: LeaseSource;
  keyId: string;
  version: number;
  pinned: boolean;
  budget: number;
  used: number;
  until: number;
}

/** leases one connection may hold at once (a backend holds one per field it writes) */
const MAX_HELD = 64;
const FIRST_BUDGET = 16;

/**
 * One connection's leases. A grant is decided as a PROTECT of the field would be (lease-grant.ts),
 * costs its budget in calls of the client's rate limit up front, and is audited (a key left veil:
 * which field, which version, for whom — never the key). A report (LEASE_AUDIT) audits the values
 * a backend protected under its leases — one record per report, with the count per field — and
 * answers whether each lease still holds: it ends when it expires, its budget is spent, the
 * configuration was published anew or the key's protect version changed (a rotation). A report
 * naming a lease this connection does not hold, or more values than a lease covers, is refused
 * (DB_LEASE_INVALID), audited as failed, and the connection closes with every lease it held.
 */
export class LeaseDesk {
  private readonly deps: LeaseDeskDeps;
  private readonly held = new Map<number, HeldLease>();
  /** the next budget per field: small for a one-row statement, doubling while a load goes on */
  private readonly budgets = new Map<string, number>();
  private next = 0;

  constructor(deps: LeaseDeskDeps) {
    this.deps = deps;
  }

  /** LEASE: throws VeilError (the caller's refusal, answered and audited by the session). */
  async grant(caller: Caller, frame: Extract<LeaseFrame, { op: 'lease' }>, requestId: string): Promise<Buffer> {
    const { settings } = this.deps;
    const field = `${frame.className}.${frame.propertyName}`;
    if (this.held.size >= MAX_HELD) this.dropExpired();
    // more fields than that on one connection: the rest keep the round trip
    if (this.held.size >= MAX_HELD) throw new DbError('DB_LEASE_UNAVAILABLE', `this connection holds ${MAX_HELD} leases already`);
    const source = settings.source();
    const budget = Math.max(1, Math.min(this.budgets.get(field) ?? FIRST_BUDGET, settings.maxBudget, this.deps.burst));
    let terms;
    try {
      terms = leaseTerms(source, settings.keys, caller, frame.role, frame.className, frame.propertyName);
      const wait = this.deps.take(caller.clientId, budget);
      if (wait > 0) throw new RateLimitedError('too many calls for this client', Math.ceil(wait));
    } catch (e) {
      if (e instanceof VeilError) {
        await this.record(requestId, caller, {
          outcome: e.status === 401 || e.status === 403 ? 'denied' : 'failed',
          code: e.code,
          instances: 0,
          fields: [],
        }).catch(() => undefined);
      }
      throw e;
    }
    this.budgets.set(field, Math.min(budget * 2, settings.maxBudget));
    const lease = ++this.next;
    const now = this.deps.now().getTime();
    try {
      // the grant is audited before the key goes out: no record, no key
      await this.record(requestId, caller, {
        outcome: 'ok',
        instances: 0,
        fields: [],
        admin: { action: 'db.lease', target: `${field} ${terms.keyId} v${terms.version} budget ${budget}` },
      });
      this.held.set(lease, {
        className: frame.className,
        propertyName: frame.propertyName,
        source,
        keyId: terms.keyId,
        version: terms.version,
        pinned: terms.pinned,
        budget,
        used: 0,
        until: now + settings.ttlMs,
      });
      return leaseGrantFrame({
        lease,
        validForMs: settings.ttlMs,
        budget,
        maxChars: this.deps.valueLength,
        kind: terms.kind,
        header: terms.header,
        label: terms.label,
        key: terms.key,
      });
    } finally {
      // the frame holds its own copy: this one is not left for the collector to find
      terms.key.fill(0);
    }
  }

  /** LEASE_AUDIT: every report is checked before any is counted; a refusal throws (and the session closes). */
  async report(caller: Caller, frame: Extract<LeaseFrame, { op: 'lease-audit' }>, requestId: string): Promise<Buffer> {
    const leases = frame.reports.map((r) => this.held.get(r.lease));
    const claimed = new Map<number, number>();
    frame.reports.forEach((r) => claimed.set(r.lease, (claimed.get(r.lease) ?? 0) + r.values));
    const bad = frame.reports.findIndex((r, i) => !leases[i] || leases[i]!.used + claimed.get(r.lease)! > leases[i]!.budget);
    if (bad >= 0) {
      const error = new DbError(
        'DB_LEASE_INVALID',
        leases[bad] ? 'a report names more values than the lease covers' : 'a report names a lease this connection does not hold',
      );
      this.held.clear();
      await this.record(requestId, caller, { outcome: 'failed', code: error.code, instances: 0, fields: [] }).catch(() => undefined);
      throw error;
    }
    const fields = new Map<string, AuditEvent['fields'][number]>();
    let instances = 0;
    frame.reports.forEach((r, i) => {
      const l = leases[i]!;
      const key = `${l.className}.${l.propertyName}`;
      const f = fields.get(key) ?? { className: l.className, propertyName: l.propertyName, action: 'Protect', count: 0 };
      f.count += r.values;
      fields.set(key, f);
      instances += r.values;
    });
    // recorded before anything is counted: a report veil cannot audit is refused, and the backend fails its statement
    await this.record(requestId, caller, { outcome: 'ok', instances, fields: [...fields.values()] });
    frame.reports.forEach((r, i) => (leases[i]!.used += r.values));
    const now = this.deps.now().getTime();
    const holds = frame.reports.map((r) => {
      const l = this.held.get(r.lease);
      const still = l !== undefined && this.holds(l, now);
      if (!still) this.held.delete(r.lease);
      return still;
    });
    return auditedFrame(holds);
  }

  /** The connection closed: its leases end with it (a backend that reconnects asks anew). */
  close(): void {
    this.held.clear();
  }

  private holds(l: HeldLease, now: number): boolean {
    if (now >= l.until || l.used >= l.budget) return false;
    const { settings } = this.deps;
    const source = settings.source();
    if (source.engine !== l.source.engine) return false;
    try {
      settings.keys.assertUsable?.();
    } catch {
      return false;
    }
    return protectVersion(settings.keys, { id: l.keyId, ...(l.pinned ? { version: l.version } : {}) }) === l.version;
  }

  private dropExpired(): void {
    const now = this.deps.now().getTime();
    for (const [id, l] of this.held) if (now >= l.until) this.held.delete(id);
  }

  private record(requestId: string, caller: Caller, e: Pick<AuditEvent, 'outcome' | 'code' | 'instances' | 'fields' | 'admin'>): Promise<void> {
    return this.deps.audit
      .record({
        eventId: randomUUID(),
        time: this.deps.now().toISOString(),
        requestId,
        channel: this.deps.channel,
        client: caller.clientId,
        subject: caller.subject,
        issuer: caller.issuer,
        outcome: e.outcome,
        ...(e.code ? { code: e.code } : {}),
        instances: e.instances,
        fields: e.fields,
        ...(e.admin ? { admin: e.admin } : {}),
      })
      .catch((cause: unknown) => {
        throw new AuditError('AUDIT_UNAVAILABLE', 'the audit sink cannot record the lease', { cause });
      });
  }
}
