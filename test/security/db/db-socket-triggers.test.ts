import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clearCustomers, customersTable, expectRateLimitHolds, marker, veilDb, type VeilDb } from '../../helpers/db-security.ts';
import { sessionGate } from '../../helpers/pg-gate.ts';

/**
 * The trigger over veil's local socket (veil.configure_socket): the same guarantees as over HTTP —
 * values protected before the row is written, one audit record per row with the database role,
 * the role's rate limit, fail closed when veil refuses or is gone (nothing of the statement is
 * written, no cleartext in any error), upserts protected once, and a backend that reconnects
 * after veil restarts. Real PostgreSQL 15, real `veil serve` listening on VEIL_DB_SOCKET.
 */
let t: VeilDb<'writer' | 'reader'>;
const PROTECTED = /^[A-Za-z0-9_-]{30,}$/;

beforeAll(async () => {
  t = await veilDb('socket', ['writer', 'reader'], { socket: true });
  await t.on(customersTable(t));
}, 120_000);

afterAll(async () => {
  await t?.close();
});

const clear = (ids: number[]) => clearCustomers(t, ids);

describe('the row trigger over the socket', () => {
  it('protects every row over one connection, audits each row with the database role, unprotects over HTTP', async () => {
    const lines = await t.on(
      `INSERT INTO customers (id, email, name) SELECT g, 'user' || g || '@example.com', 'Person ' || g FROM generate_series(1, 300) g;
      SELECT veil.session_stats();`,
      t.role.writer,
    );
    // one HTTP connection for the token, one socket connection; one AUTH, then one PROTECT frame per row
    expect(JSON.parse(lines.at(-1)!)).toEqual({ connects: 2, tokens: 1, requests: 302, transforms: 300 });
    expect(await t.on("SELECT count(*) FROM customers WHERE email LIKE 'user%' OR name LIKE 'Person%'")).toEqual(['0']);
    const [email, name] = (await t.on('SELECT email, name FROM customers WHERE id = 7'))[0]!.split('|');
    expect(email).toMatch(PROTECTED);
    expect(name).toMatch(PROTECTED);
    expect(await clear([7])).toEqual(['7|user7@example.com|Person 7']);
    // deterministic email: the socket protects as veil.protect over HTTP does
    expect(await t.on("SELECT email = veil.protect('Customer', 'email', 'user7@example.com') FROM customers WHERE id = 7")).toEqual(['t']);
    const records = (await t.audit(t.role.writer)).filter((r) => r.function === 'trigger');
    expect(records).toHaveLength(300);
    expect(records.every((r) => r.outcome === 'ok' && r.instances === 2 && r.table === 'public.customers')).toBe(true);
  });

  it('an upsert stores each value protected once', async () => {
    await t.on(
      `INSERT INTO customers (id, email, name) VALUES (1, 'new1@example.com', 'New One'), (301, 'fresh@example.com', 'Fresh')
      ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email, name = EXCLUDED.name, visits = customers.visits + 1;`,
      t.role.writer,
    );
    expect(await clear([1, 301])).toEqual(['1|new1@example.com|New One', '301|fresh@example.com|Fresh']);
  });

  it("the role's rate limit holds: over it, nothing is sent and nothing written", async () => {
    await expectRateLimitHolds(t, 400);
  });

  it('a protect role the client does not hold: the statement fails closed, no cleartext in the error', async () => {
    await t.configure('no-such-role');
    await t.on(`SELECT veil.configure_socket('${t.veil.socketPath}')`);
    const secret = marker('role');
    const r = await t.attempt(`INSERT INTO customers (id, email, name) VALUES (500, '${secret}@example.com', 'x'), (501, 'b${secret}', 'y');`, t.role.writer);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/42501/);
    expect(r.stderr).not.toContain(secret);
    expect(await t.on('SELECT count(*) FROM customers WHERE id >= 500')).toEqual(['0']);
    await t.configure();
    await t.on(`SELECT veil.configure_socket('${t.veil.socketPath}')`);
  });

  it('veil gone: DB_SERVICE_UNAVAILABLE and nothing written; back: the next statement protects', async () => {
    const secret = marker('down');
    await t.veil.stop();
    const down = await t.attempt(`INSERT INTO customers (id, email, name) VALUES (600, '${secret}', 'z');`, t.role.writer);
    expect(down.code).not.toBe(0);
    expect(down.stderr).toContain('DB_SERVICE_UNAVAILABLE');
    expect(down.stderr).not.toContain(secret);
    await t.veil.start();
    await t.on(`INSERT INTO customers (id, email, name) VALUES (601, 'a@example.com', 'A');`, t.role.writer);
    expect(await t.on('SELECT count(*) FROM customers WHERE id = 600')).toEqual(['0']);
    expect(await clear([601])).toEqual(['601|a@example.com|A']);
  });

  it('a session whose connection veil closed (a restart) protects on a fresh one', async () => {
    // one psql session: a row, a wait at a gate while veil restarts, a row on the kept (now dead) connection
    const gate = await sessionGate(t.db);
    const session = t.on(
      `INSERT INTO customers (id, email, name) VALUES (700, 'x@example.com', 'X');
      ${gate.wait}
      INSERT INTO customers (id, email, name) VALUES (701, 'y@example.com', 'Y');
      SELECT veil.session_stats();`,
      t.role.writer,
    );
    try {
      await gate.reached();
      await t.veil.stop();
      await t.veil.start();
    } finally {
      await gate.open();
    }
    const stats = JSON.parse((await session).at(-1)!) as { connects: number };
    expect(stats.connects).toBe(3); // the token's HTTP connection, the socket, the socket again
    expect(await clear([700, 701])).toEqual(['700|x@example.com|X', '701|y@example.com|Y']);
  }, 60_000);
});
