import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../helpers/memory-audit-sink.ts';
import { openDbSocket, type DbSocketServer } from '../../../src/db/index.ts';
import type { LeaseSource } from '../../../src/db/lease-grant.ts';
import { tokenInvalid } from '../../../src/identity/errors.ts';
import type { BearerVerifier } from '../../../src/identity/token-verifier.ts';
import { engineFixture, rotate, type EngineFixture } from '../../helpers/engine-fixture.ts';
import { personConfig } from '../../helpers/subject-config.ts';
import { authFrame, leaseAuditFrame, leaseFrame, parseReply, type Reply } from '../../helpers/db-client-frames.ts';

/**
 * Attacks on the database socket's leased keys (docs/database.md, "Leased keys"), against the
 * real socket server with an engine of config/example.yaml: no token, a role the client does not
 * hold, a field the role may not protect, fields whose keys are never leased (FF1, scoped to the
 * data subject), an expired lease, reports naming leases the connection does not hold or more
 * values than a lease covers, garbage frames, a flood of leases beyond the client's rate limit.
 * Every grant and report is audited; no audit record and no refusal holds a key byte.
 */
let clock = Date.parse('2030-01-01T00:00:00Z');
const verifier: BearerVerifier = {
  async verifyHeader(header) {
    const token = header?.replace(/^Bearer /, '') ?? '';
    if (!token.startsWith('good')) throw tokenInvalid('test');
    return { subject: 'pg', clientId: token, issuer: 'test', roles: ['ingest', 'support'], expiresAt: Math.floor(clock / 1000) + 3600 };
  },
};
const audit = new MemoryAuditSink();
let dir: string;
const fixture: EngineFixture = engineFixture();
let source: LeaseSource = { engine: fixture.engine, config: fixture.config };
let server: DbSocketServer;
let plain: DbSocketServer;
const keyBytes: Buffer[] = [];

/** One connection: send a frame, get its reply (or 'closed'). */
async function open(path = server.path): Promise<{ send(frame: Buffer): Promise<Reply | 'closed'>; socket: Socket }> {
  const socket = connect(path);
  let buffer = Buffer.alloc(0);
  const waiting: ((r: Reply | 'closed') => void)[] = [];
  socket.on('data', (d: Buffer) => {
    buffer = Buffer.concat([buffer, d]);
    while (buffer.length >= 4 && buffer.length >= 4 + buffer.readUInt32BE(0)) {
      const reply = parseReply(buffer.subarray(4, 4 + buffer.readUInt32BE(0)));
      if (reply.kind === 'lease') keyBytes.push(Buffer.from(reply.grant.key));
      waiting.shift()?.(reply);
      buffer = buffer.subarray(4 + buffer.readUInt32BE(0));
    }
  });
  socket.on('close', () => {
    while (waiting.length) waiting.shift()!('closed');
  });
  socket.on('error', () => undefined);
  await new Promise((r) => socket.once('connect', r));
  return {
    socket,
    send: (f) =>
      new Promise((r) => {
        waiting.push(r);
        socket.write(f);
      }),
  };
}

const codeOf = (r: Reply | 'closed') => (r === 'closed' ? 'closed' : r.kind === 'error' ? r.code : r.kind);
async function authed(token = 'good-1') {
  const c = await open();
  expect(codeOf(await c.send(authFrame(token)))).toBe('auth-ok');
  return c;
}
async function lease(c: Awaited<ReturnType<typeof open>>, property = 'email', role = 'ingest') {
  const r = await c.send(leaseFrame('app', role, 'Customer', property));
  if (r === 'closed' || r.kind !== 'lease') throw new Error(`no lease: ${codeOf(r)}`);
  return r.grant;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'veil-db-lease-'));
  const options = { mode: 0o600, maxConnections: 16, authTimeoutMs: 5000, frameTimeoutMs: 5000 };
  const deps = {
    engine: () => source.engine,
    verifier,
    audit,
    now: () => new Date(clock),
    log: { warn: () => undefined, error: () => undefined },
    limits: { bodyBytes: 1 << 20, instancesPerCall: 1000, valueLength: 64 },
    rateLimit: { transformPerSecond: 1, transformBurst: 1000 },
  };
  server = await openDbSocket(
    { ...options, path: join(dir, 'lease.sock') },
    { ...deps, leases: { ttlMs: 10_000, maxBudget: 128, source: () => source, keys: fixture.keys } },
  );
  plain = await openDbSocket({ ...options, path: join(dir, 'plain.sock') }, deps);
});
afterAll(async () => {
  await server?.close();
  await plain?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('leased keys over the database socket', () => {
  it('no lease without a token, for a role the client does not hold, or a field the role may not protect', async () => {
    const anonymous = await open();
    expect(codeOf(await anonymous.send(leaseFrame('app', 'ingest', 'Customer', 'email')))).toBe('TOKEN_MISSING');
    anonymous.socket.destroy();
    const c = await authed('good-roles');
    expect(codeOf(await c.send(leaseFrame('app', 'fraud', 'Customer', 'email')))).toBe('ROLE_NOT_HELD');
    expect(codeOf(await c.send(leaseFrame('app', 'support', 'Customer', 'name')))).toBe('ACTION_NOT_GRANTED');
    expect(codeOf(await c.send(leaseFrame('app', 'ingest', 'Customer', 'shoeSize')))).toBe('FIELD_UNKNOWN');
    c.socket.destroy();
    const denied = audit.events.filter((e) => e.outcome === 'denied').map((e) => e.code);
    expect(denied).toEqual(expect.arrayContaining(['TOKEN_MISSING', 'ROLE_NOT_HELD', 'ACTION_NOT_GRANTED']));
  });

  it('never leases an FF1 or HMAC key, a key scoped to the data subject, or anything with leases off', async () => {
    const c = await authed('good-kinds');
    expect(codeOf(await c.send(leaseFrame('app', 'ingest', 'Customer', 'cardNumber')))).toBe('DB_LEASE_UNAVAILABLE');
    expect(codeOf(await c.send(leaseFrame('app', 'ingest', 'Customer', 'segmentKey')))).toBe('DB_LEASE_UNAVAILABLE');
    const people = engineFixture(personConfig());
    const before = source;
    source = { engine: people.engine, config: people.config };
    try {
      expect(codeOf(await c.send(leaseFrame('app', 'ingest', 'Person', 'email')))).toBe('DB_LEASE_UNAVAILABLE');
      expect(codeOf(await c.send(leaseFrame('app', 'ingest', 'Person', 'name')))).toBe('DB_LEASE_UNAVAILABLE');
    } finally {
      source = before;
    }
    c.socket.destroy();
    const off = await open(plain.path);
    await off.send(authFrame('good-off'));
    expect(codeOf(await off.send(leaseFrame('app', 'ingest', 'Customer', 'email')))).toBe('DB_LEASE_UNAVAILABLE');
    expect(codeOf(await off.send(leaseAuditFrame('app', [{ lease: 1, values: 1 }])))).toBe('DB_LEASE_INVALID');
    off.socket.destroy();
  });

  it('a report is audited with its counts; the lease ends when it expires, its budget is spent, the configuration or the key changes', async () => {
    const c = await authed('good-report');
    const email = await lease(c);
    expect(email).toMatchObject({ budget: 16, validForMs: 10_000, maxChars: 64, kind: 'aes-siv', label: 'Customer.email' });
    const name = await lease(c, 'name');
    expect(
      await c.send(
        leaseAuditFrame('app', [
          { lease: email.lease, values: 10 },
          { lease: name.lease, values: 3 },
        ]),
      ),
    ).toEqual({ kind: 'audited', holds: [true, true] });
    const report = audit.events.at(-1)!;
    expect(report).toMatchObject({
      outcome: 'ok',
      client: 'good-report',
      instances: 13,
      fields: [
        { className: 'Customer', propertyName: 'email', action: 'Protect', count: 10 },
        { className: 'Customer', propertyName: 'name', action: 'Protect', count: 3 },
      ],
    });
    // the budget spent: the lease ends (the next one of the field covers twice as many)
    expect(await c.send(leaseAuditFrame('app', [{ lease: email.lease, values: 6 }]))).toEqual({ kind: 'audited', holds: [false] });
    expect((await lease(c)).budget).toBe(32);
    // a rotation, a new configuration, the clock past the lease's life
    const rotated = await lease(c);
    rotate(fixture.keys, 'customer-siv');
    expect(await c.send(leaseAuditFrame('app', [{ lease: rotated.lease, values: 1 }]))).toEqual({ kind: 'audited', holds: [false] });
    const published = await lease(c);
    const before = source;
    source = { engine: engineFixture(undefined, { keys: fixture.keys }).engine, config: fixture.config };
    expect(await c.send(leaseAuditFrame('app', [{ lease: published.lease, values: 1 }]))).toEqual({ kind: 'audited', holds: [false] });
    source = before;
    const aging = await lease(c);
    clock += 10_001;
    expect(await c.send(leaseAuditFrame('app', [{ lease: aging.lease, values: 1 }]))).toEqual({ kind: 'audited', holds: [false] });
    // an ended lease is forgotten: reporting on it again closes the connection
    expect(codeOf(await c.send(leaseAuditFrame('app', [{ lease: aging.lease, values: 1 }])))).toBe('DB_LEASE_INVALID');
    expect(codeOf(await c.send(leaseFrame('app', 'ingest', 'Customer', 'email')))).toBe('closed');
  });

  it("a report beyond the budget, of another connection's lease, or garbage: refused, audited, the connection closed", async () => {
    const a = await authed('good-a');
    const granted = await lease(a);
    const b = await authed('good-b');
    expect(codeOf(await b.send(leaseAuditFrame('app', [{ lease: granted.lease, values: 1 }])))).toBe('DB_LEASE_INVALID');
    expect(codeOf(await b.send(leaseFrame('app', 'ingest', 'Customer', 'email')))).toBe('closed');
    expect(codeOf(await a.send(leaseAuditFrame('app', [{ lease: granted.lease, values: granted.budget + 1 }])))).toBe('DB_LEASE_INVALID');
    expect(codeOf(await a.send(leaseFrame('app', 'ingest', 'Customer', 'email')))).toBe('closed');
    expect(audit.events.filter((e) => e.code === 'DB_LEASE_INVALID' && e.outcome === 'failed').map((e) => e.client)).toEqual(
      expect.arrayContaining(['good-a', 'good-b']),
    );
    const g = await authed('good-garbage');
    const garbage = Buffer.from([0, 0, 0, 6, 0x05, 3, 0x61, 0x70, 0x70, 0xff]);
    expect(codeOf(await g.send(garbage))).toBe('REQUEST_MALFORMED');
    expect(codeOf(await g.send(leaseFrame('app', 'ingest', 'Customer', 'email')))).toBe('closed');
  });

  it("a flood of leases spends the client's rate limit up front: past it, RATE_LIMITED", async () => {
    const c = await authed('good-flood');
    const budgets = [];
    let last: Reply | 'closed' = 'closed';
    for (let i = 0; i < 20; i++) {
      last = await c.send(leaseFrame('app', 'ingest', 'Customer', 'name'));
      if (last === 'closed' || last.kind !== 'lease') break;
      budgets.push(last.grant.budget);
    }
    // burst 1000, one call a second: 16 + 32 + 64 + 6 × 128 = 880, then 128 more do not fit
    expect(budgets).toEqual([16, 32, 64, 128, 128, 128, 128, 128, 128]);
    expect(last).toMatchObject({ kind: 'error', code: 'RATE_LIMITED', status: 429 });
    c.socket.destroy();
  });

  it('no audit record holds a key byte, and each grant is audited by field and key version', async () => {
    expect(keyBytes.length).toBeGreaterThan(5);
    const text = JSON.stringify(audit.events);
    for (const key of keyBytes) {
      for (const spelling of [key.toString('hex'), key.toString('base64'), key.toString('base64url'), key.subarray(0, 16).toString('hex')])
        expect(text).not.toContain(spelling);
    }
    expect(audit.events.filter((e) => e.admin?.action === 'db.lease').map((e) => e.admin!.target)).toContain('Customer.email customer-siv v1 budget 16');
  });
});
