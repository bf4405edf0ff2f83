import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../helpers/memory-audit-sink.ts';
import { openDbSocket, type DbSocketServer } from '../../../src/db/index.ts';
import { tokenInvalid } from '../../../src/identity/errors.ts';
import type { BearerVerifier, Caller } from '../../../src/identity/token-verifier.ts';
import { engineFixture } from '../../helpers/engine-fixture.ts';
import { authFrame, parseReply, protectFrame, type Reply } from '../../helpers/db-client-frames.ts';

/**
 * The socket's token rules, on a clock the test moves: a token is verified once per connection,
 * verified again every minute (a token the verifier stops accepting is refused then), and refused
 * as soon as it expires (no clock tolerance here) until the connection authenticates again.
 * Refusals are audited as denied, without a value.
 */
let clock = Date.parse('2030-01-01T00:00:00Z');
const revoked = new Set<string>();
/** tokens the verifier stops accepting right after it accepted them once (withdrawn after AUTH) */
const withdrawAfterAuth = new Set(['good-5']);
let verifications = 0;
/** each token's expiry, fixed when it is first verified: two minutes */
const expiries = new Map<string, number>();
const verifier: BearerVerifier = {
  async verifyHeader(header) {
    verifications++;
    const token = header?.replace(/^Bearer /, '') ?? '';
    if (!token.startsWith('good') || revoked.has(token)) throw tokenInvalid('test');
    const caller: Caller = {
      subject: 'pg',
      clientId: 'pg',
      issuer: 'test',
      roles: ['ingest'],
      expiresAt: expiries.get(token) ?? Math.floor(clock / 1000) + 120,
    };
    expiries.set(token, caller.expiresAt);
    if (withdrawAfterAuth.delete(token)) revoked.add(token);
    return caller;
  },
};
const audit = new MemoryAuditSink();
let dir: string;
let server: DbSocketServer;
const SECRET = 'grace-7d1e@example.com';
const items = [{ className: 'Customer', propertyName: 'email', value: SECRET }];

async function call(frames: Buffer[]): Promise<Reply[]> {
  const socket = connect(server.path);
  const replies: Reply[] = [];
  let buffer = Buffer.alloc(0);
  return new Promise((resolve, reject) => {
    socket.on('error', reject);
    socket.on('close', () => resolve(replies));
    socket.on('data', (d: Buffer) => {
      buffer = Buffer.concat([buffer, d]);
      while (buffer.length >= 4 && buffer.length >= 4 + buffer.readUInt32BE(0)) {
        replies.push(parseReply(buffer.subarray(4, 4 + buffer.readUInt32BE(0))));
        buffer = buffer.subarray(4 + buffer.readUInt32BE(0));
        const next = frames[replies.length];
        if (next) socket.write(next);
        else {
          socket.destroy();
          resolve(replies);
        }
      }
    });
    socket.on('connect', () => socket.write(frames[0]!));
  });
}

/** AUTH, then for each step: move the clock, then PROTECT. */
async function session(token: string, steps: number[]): Promise<string[]> {
  const socket = connect(server.path);
  let buffer = Buffer.alloc(0);
  const waiting: ((r: Reply) => void)[] = [];
  socket.on('data', (d: Buffer) => {
    buffer = Buffer.concat([buffer, d]);
    while (buffer.length >= 4 && buffer.length >= 4 + buffer.readUInt32BE(0)) {
      waiting.shift()!(parseReply(buffer.subarray(4, 4 + buffer.readUInt32BE(0))));
      buffer = buffer.subarray(4 + buffer.readUInt32BE(0));
    }
  });
  await new Promise((r) => socket.once('connect', r));
  const send = (f: Buffer) =>
    new Promise<Reply>((r) => {
      waiting.push(r);
      socket.write(f);
    });
  const codes = [(await send(authFrame(token))).kind as string];
  for (const ms of steps) {
    clock += ms;
    const reply = await send(protectFrame('app', 'ingest', items));
    expect(JSON.stringify(reply)).not.toContain('grace-7d1e');
    codes.push(reply.kind === 'error' ? reply.code : reply.kind);
  }
  socket.destroy();
  return codes;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'veil-db-socket-'));
  const { engine } = engineFixture();
  server = await openDbSocket(
    { path: join(dir, 'db.sock'), mode: 0o600, maxConnections: 8, authTimeoutMs: 5000, frameTimeoutMs: 5000 },
    {
      engine: () => engine,
      verifier,
      audit,
      now: () => new Date(clock),
      log: { warn: () => undefined, error: () => undefined },
      limits: { bodyBytes: 1 << 20, instancesPerCall: 1000, valueLength: 64 },
      rateLimit: { transformPerSecond: 1000, transformBurst: 1000 },
    },
  );
});
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("the database socket's tokens", () => {
  it('an expired token is refused (TOKEN_EXPIRED) until the connection authenticates again', async () => {
    expect(await session('good-1', [0, 119_000, 1_000, 5_000])).toEqual(['auth-ok', 'values', 'values', 'TOKEN_EXPIRED', 'TOKEN_MISSING']);
    expect(await call([authFrame('good-2'), protectFrame('app', 'ingest', items)]).then((r) => r.map((x) => x.kind))).toEqual(['auth-ok', 'values']);
  });

  it('verified once per connection, again every minute: a token withdrawn meanwhile is refused then', async () => {
    const before = verifications;
    expect(await session('good-3', [0, 10_000, 10_000])).toEqual(['auth-ok', 'values', 'values', 'values']);
    expect(verifications - before).toBe(1);
    // withdrawn after AUTH: honoured until the minute's check, refused there
    expect(await session('good-5', [0, 1_000, 61_000])).toEqual(['auth-ok', 'values', 'values', 'TOKEN_INVALID']);
  });

  it('a forged token is refused and audited as denied, with no value in the record or the reply', async () => {
    const replies = await call([authFrame('forged'), protectFrame('app', 'ingest', items)]).catch(() => []);
    expect(replies[0]).toMatchObject({ kind: 'error', code: 'TOKEN_INVALID', status: 401 });
    const records = audit.events.filter((e) => e.outcome === 'denied');
    expect(records.map((e) => e.code)).toContain('TOKEN_INVALID');
    expect(records.map((e) => e.code)).toContain('TOKEN_EXPIRED');
    expect(records.every((e) => e.requestId.startsWith('db-socket:'))).toBe(true);
    expect(JSON.stringify(audit.events)).not.toContain('grace-7d1e');
  });

  it('a value over the limit: VALUE_TOO_LONG by instance, never the value', async () => {
    const long = [{ className: 'Customer', propertyName: 'email', value: `${SECRET}${'x'.repeat(64)}` }];
    const [, reply] = await call([authFrame('good-6'), protectFrame('app', 'ingest', long)]);
    expect(reply).toMatchObject({ kind: 'error', code: 'VALUE_TOO_LONG', status: 422, instances: [0], pointer: '/requests/0/instances/0/value' });
    expect(JSON.stringify(reply)).not.toContain('grace-7d1e');
  });
});
