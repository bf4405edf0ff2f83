import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSecret } from '../../helpers/postgres.ts';
import { clearCustomers, customersTable, expectRateLimitHolds, marker, veilDb, type VeilDb } from '../../helpers/db-security.ts';
import { sessionGate } from '../../helpers/pg-gate.ts';
import { authFrame, leaseFrame, parseReply, type Reply } from '../../helpers/db-client-frames.ts';

/**
 * The trigger with leased keys (veil.configure_socket(path, lease => true), veil serve with
 * VEIL_DB_SOCKET_LEASES=on): the same guarantees as over the socket's round trip — values
 * protected before the row is written (byte for byte as veil: deterministic values equal
 * veil.protect's, randomized ones unprotect through veil), one audit record per row with the
 * database role in pg_veil and every value in veil's audit, the role's rate limit, fail closed
 * when veil is gone (a lease still live does not let a statement commit unaudited), upserts
 * protected once, FF1 fields on the round trip — and no key byte in the server log, an error, the
 * statistics or either audit log. Real PostgreSQL 15, real `veil serve`.
 */
let t: VeilDb<'writer' | 'reader'>;
const PROTECTED = /^[A-Za-z0-9_-]{30,}$/;
const lease = (on: boolean) => t.on(`SELECT veil.configure_socket('${t.veil.socketPath}', lease => ${on})`);

beforeAll(async () => {
  t = await veilDb('lease', ['writer', 'reader'], { socket: true, env: { VEIL_DB_SOCKET_LEASES: 'on' } });
  await t.on(customersTable(t, { card: true }));
  await lease(true);
}, 120_000);

afterAll(async () => {
  await t?.close();
});

const clear = (ids: number[]) => clearCustomers(t, ids);
const veilAudit = async () =>
  (await readFile(join(t.veil.dataDir, 'audit.log'), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { instances: number; requestId: string; admin?: { action: string }; fields: { propertyName: string; count: number }[] });

describe('the row trigger with leased keys', () => {
  it('protects every row locally, audits each row with the database role and every value in veil, as veil protects', async () => {
    const lines = await t.on(
      `INSERT INTO customers (id, email, name) SELECT g, 'user' || g || '@example.com', 'Person ' || g FROM generate_series(1, 300) g;
      SELECT veil.session_stats();`,
      t.role.writer,
    );
    const stats = JSON.parse(lines.at(-1)!) as Record<string, number>;
    expect(stats).toMatchObject({ leased: 600, transforms: 0, connects: 2, tokens: 1 });
    expect(await t.on("SELECT count(*) FROM customers WHERE email LIKE 'user%' OR name LIKE 'Person%'")).toEqual(['0']);
    const [email, name] = (await t.on('SELECT email, name FROM customers WHERE id = 7'))[0]!.split('|');
    expect(email).toMatch(PROTECTED);
    expect(name).toMatch(PROTECTED);
    expect(await clear([7, 300])).toEqual(['7|user7@example.com|Person 7', '300|user300@example.com|Person 300']);
    // veil.protect takes the round trip: veil's own engine gives the same deterministic value
    expect(await t.on("SELECT count(*) FROM customers WHERE id <= 20 AND email = veil.protect('Customer', 'email', 'user' || id || '@example.com')")).toEqual([
      '20',
    ]);
    const records = (await t.audit(t.role.writer)).filter((r) => r.function === 'trigger');
    expect(records).toHaveLength(300);
    expect(records.every((r) => r.outcome === 'ok' && r.instances === 2 && r.table === 'public.customers')).toBe(true);
    const reported = (await veilAudit()).filter((e) => e.requestId.startsWith('db-socket:') && !e.admin).flatMap((e) => e.fields);
    expect(reported.filter((f) => f.propertyName === 'email').reduce((n, f) => n + f.count, 0)).toBe(300);
    expect(reported.filter((f) => f.propertyName === 'name').reduce((n, f) => n + f.count, 0)).toBe(300);
  });

  it('an FF1 field keeps the round trip beside leased ones; an upsert stores each value protected once', async () => {
    const lines = await t.on(
      `INSERT INTO customers (id, email, card) VALUES (400, 'card@example.com', '4111 1111 1111 1111');
      INSERT INTO customers (id, email, name) VALUES (1, 'new1@example.com', 'New One'), (301, 'fresh@example.com', 'Fresh')
        ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email, name = EXCLUDED.name, visits = customers.visits + 1;
      SELECT veil.session_stats();`,
      t.role.writer,
    );
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ transforms: 1 });
    expect(await t.on("SELECT card <> '4111 1111 1111 1111' AND card LIKE '4111 11%1111' FROM customers WHERE id = 400")).toEqual(['t']);
    expect(await clear([1, 301, 400])).toEqual(['1|new1@example.com|New One', '301|fresh@example.com|Fresh', '400|card@example.com|']);
  });

  it("the role's rate limit holds: over it, nothing is sealed and nothing written", async () => {
    await expectRateLimitHolds(t, 500);
  });

  it('veil gone while a lease lives: the statement cannot report its values, fails, and writes nothing; back: the next one protects', async () => {
    const secret = marker('gone');
    // one psql session: a row (its keys leased), a wait at a gate while veil goes, a row under the lease
    const gate = await sessionGate(t.db);
    const session = t.attempt(
      `INSERT INTO customers (id, email, name) VALUES (600, 'a@example.com', 'A');
      ${gate.wait}
      INSERT INTO customers (id, email, name) VALUES (601, '${secret}@example.com', 'B${secret}');`,
      t.role.writer,
    );
    try {
      await gate.reached();
      await t.veil.stop();
    } finally {
      await gate.open();
    }
    const r = await session;
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('DB_SERVICE_UNAVAILABLE');
    expect(r.stderr).not.toContain(secret);
    expect(await t.on('SELECT id FROM customers WHERE id IN (600, 601) ORDER BY id')).toEqual(['600']);
    await t.veil.start();
    await t.on(`INSERT INTO customers (id, email, name) VALUES (602, 'c@example.com', 'C');`, t.role.writer);
    expect(await clear([600, 602])).toEqual(['600|a@example.com|A', '602|c@example.com|C']);
  }, 60_000);

  it('no key byte in the server log, an error, the statistics or either audit log', async () => {
    const key = await leasedKey('email');
    const spellings = [key.toString('hex'), key.toString('base64'), key.toString('base64url'), key.subarray(0, 16).toString('hex')];
    const bad = await t.attempt(
      `INSERT INTO customers (id, email, name) VALUES (700, 'x@example.com', 'X'), (700, 'y@example.com', 'Y');
      SELECT veil.session_stats();`,
      t.role.writer,
    );
    const [dataDir] = await t.on('SHOW data_directory');
    const serverLog = await readFile(process.env.VEIL_PG_LOG ?? join(dirname(dataDir!), 'server.log'), 'utf8').catch(() => '');
    const texts = [
      bad.stdout,
      bad.stderr,
      serverLog,
      JSON.stringify(await t.audit(t.role.writer)),
      await readFile(join(t.veil.dataDir, 'audit.log'), 'utf8'),
      (await t.on("SELECT string_agg(query, E'\\n') FROM pg_stat_activity")).join('\n'),
    ];
    for (const text of texts) for (const s of spellings) expect(text.includes(s)).toBe(false);
  });
});

/** The key veil leases for Customer.<property> now, fetched as a backend would (the database's client and token). */
async function leasedKey(property: string): Promise<Buffer> {
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: await readSecret(t.veil) });
  const { access_token: token } = (await (await fetch(`${t.veil.url}/connect/token`, { method: 'POST', body: form })).json()) as { access_token: string };
  const socket = connect(t.veil.socketPath!);
  const replies: Reply[] = [];
  let buffer = Buffer.alloc(0);
  await new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('connect', () => socket.write(authFrame(token)));
    socket.on('data', (d: Buffer) => {
      buffer = Buffer.concat([buffer, d]);
      while (buffer.length >= 4 && buffer.length >= 4 + buffer.readUInt32BE(0)) {
        replies.push(parseReply(buffer.subarray(4, 4 + buffer.readUInt32BE(0))));
        buffer = buffer.subarray(4 + buffer.readUInt32BE(0));
        if (replies.length === 1) socket.write(leaseFrame('postgres', 'ingest', 'Customer', property));
        else {
          socket.destroy();
          resolve();
        }
      }
    });
  });
  const reply = replies[1]!;
  if (reply.kind !== 'lease') throw new Error('no lease');
  return Buffer.from(reply.grant.key);
}
