import { randomBytes, timingSafeEqual } from 'node:crypto';
import { ADMIN_ROLES, type AdminRight, type Caller } from '../identity/index.ts';

import { SandboxKeys } from './sandbox-keys.ts';
import { PortalError } from './errors.ts';

/** An admin's session: who signed in, the CSRF token of its forms, its sandbox keys. In memory only. */
export interface Session {
  id: string;
  csrf: string;
  caller: Caller;
  createdAt: Date;
  expiresAt: Date;
  /** random keys for the tester, made on first use, gone with the session */
  sandbox: SandboxKeys;
}

/** A session ends at the identity token's expiry, and at most this long after sign-in. */
export const SESSION_MAX_SECONDS = 30 * 60;

/** Who a session belongs to: the same subject of another issuer is another identity. */
export const identityOf = (caller: Caller) => `${caller.issuer}\u0000${caller.subject}`;

/**
 * Portal sessions, held in the serving process's memory: a restart signs everyone out, and sandbox
 * keys are never written anywhere. Ids and CSRF tokens are 256-bit random values. Each identity
 * holds at most `perIdentity` sessions (signing in again ends its own oldest one); when the store
 * is full, new sign-ins are refused (SESSIONS_FULL) rather than signing anybody else out.
 */
export class SessionStore {
  private readonly sessions = new Map<string, Session>();
  private readonly now: () => Date;
  private readonly perIdentity: number;
  private readonly max: number;

  constructor(now: () => Date, limits: { perIdentity: number; max: number } = { perIdentity: 5, max: 1000 }) {
    this.now = now;
    this.perIdentity = limits.perIdentity;
    this.max = limits.max;
  }

  create(caller: Caller): Session {
    const now = this.now();
    const expiresAt = new Date(Math.min(caller.expiresAt * 1000, now.getTime() + SESSION_MAX_SECONDS * 1000));
    this.sweep();
    const own = [...this.sessions.values()].filter((s) => identityOf(s.caller) === identityOf(caller));
    // Map order is creation order: the first of its own is the oldest
    for (const old of own.slice(0, Math.max(0, own.length - this.perIdentity + 1))) this.sessions.delete(old.id);
    if (this.sessions.size >= this.max) throw new PortalError('SESSIONS_FULL', 'the portal holds as many sessions as it may; sign in again when one ends');
    const session: Session = { id: token(), csrf: token(), caller, createdAt: now, expiresAt, sandbox: new SandboxKeys() };
    this.sessions.set(session.id, session);
    return session;
  }

  get(id: string | undefined): Session | undefined {
    if (!id) return undefined;
    const session = this.sessions.get(id);
    if (session && session.expiresAt <= this.now()) {
      this.sessions.delete(id);
      return undefined;
    }
    return session;
  }

  end(id: string): void {
    this.sessions.delete(id);
  }

  private sweep(): void {
    const now = this.now();
    for (const [id, s] of this.sessions) if (s.expiresAt <= now) this.sessions.delete(id);
  }
}

/** Whether the session's identity holds an admin right; any admin role may read. */
export function holds(session: Session, right: AdminRight): boolean {
  const roles = session.caller.roles;
  if (right === 'viewer') return Object.values(ADMIN_ROLES).some((r) => roles.includes(r));
  return roles.includes(ADMIN_ROLES[right]);
}

export function csrfMatches(session: Session, given: unknown): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(session.csrf);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

function token(): string {
  return randomBytes(32).toString('base64url');
}
