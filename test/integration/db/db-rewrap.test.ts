import { spawn } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngine } from '../../../src/app/open-engine.ts';
import { EXAMPLE_CONFIG } from '../../../src/env/index.ts';
import type { Chain, Engine } from '../../../src/engine/index.ts';
import { veilDb, type VeilDb } from '../../helpers/db-security.ts';
import { databaseUrl, psql } from '../../helpers/postgres.ts';
import { ROOT, waitFor } from '../../helpers/processes.ts';

/**
 * Issue 18's done-when: `veil db rewrap` of a 100,000-row table after a rotation of the keys its
 * columns use, as a real process against the real PostgreSQL, SIGKILLed once mid-run and run again
 * to the end. The table carries veil's trigger (the last ten rows were written through it by a
 * real `veil serve`); the rest was protected here under version 1 and loaded with COPY before the
 * trigger was attached. psql, a reader that is not veil, checks by id: 100,000 rows, none lost or
 * duplicated, every AES value under version 2 and unprotecting to the cleartext generated here,
 * the format-preserving card (key pinned to version 1) unchanged, and the planted bad values —
 * a key version the keystore lacks, a value that is not protected — left as stored and reported
 * by id, column and code, never by value.
 */
const ROWS = 100_000;
const THROUGH_TRIGGER = 10;
const UNKNOWN_VERSION_IDS = [7, 25_000, 50_001, 77_777, 99_990];
const NOT_PROTECTED_ID = 60_000;
const NOT_PROTECTED = 'not protected at all';
const cleartext = (id: number) => ({
  email: `user${id}@example.com`,
  name: id % 13 === 0 ? null : `Person ${id} Lovelace`,
  card: `4111-1111-${String(1000 + (id % 9000))}-${String(id % 10_000).padStart(4, '0')}`,
  city: `city-${id % 50}`,
});
const versionOf = (value: string) => Buffer.from(value, 'base64url').readUInt32BE(1);
const role = (value: string) => ({ name: 'Role', value });
const action = (value: string) => ({ name: 'Action', value });
const fields = ['email', 'name', 'cardNumber'].map((propertyName) => ({ className: 'Customer', propertyName }));

let vdb: VeilDb<'writer'>;
/** what was stored for ids 1..ROWS-THROUGH_TRIGGER before the rotation (the trigger's rows: unknown here) */
const loaded = new Map<number, { email: string; name: string | null; card: string }>();

async function engineNow(): Promise<Engine> {
  return (await openEngine({ configFile: EXAMPLE_CONFIG, dataDir: vdb.veil.dataDir, env: {}, now: () => new Date(), provision: false })).engine;
}

function bindAs(engine: Engine, act: 'Protect' | 'Unprotect'): Chain[] {
  return [...engine.bind({ identity: { roles: ['fraud'] }, rightsEvidences: [role('fraud')], processingEvidences: [action(act)], fields }).transforms];
}

const REWRAP_ARGS = [
  'db',
  'rewrap',
  '--table',
  'public.customers',
  '--key-column',
  'id',
  '--column',
  'email=Customer.email',
  '--column',
  'name=Customer.name',
  '--column',
  'card=Customer.cardNumber',
  '--role',
  'fraud',
  '--batch',
  '1000',
];

function rewrapProcess(): {
  child: ReturnType<typeof spawn>;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
} {
  const child = spawn(join(ROOT, 'bin/veil'), [...REWRAP_ARGS, '--data-dir', vdb.veil.dataDir], {
    env: { ...process.env, VEIL_PG_URL: databaseUrl(vdb.db) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += String(d)));
  child.stderr!.on('data', (d) => (stderr += String(d)));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done };
}

/** Every row as psql prints it: id → stored email, name (null), card, city. */
async function readTable(where = 'true'): Promise<Map<number, { email: string; name: string | null; card: string; city: string }>> {
  const run = await psql(`SELECT id, email, coalesce(name, '<null>'), card, city FROM customers WHERE ${where} ORDER BY id`, { database: vdb.db });
  expect(run.code, run.stderr).toBe(0);
  const rows = new Map<number, { email: string; name: string | null; card: string; city: string }>();
  for (const line of run.stdout.split('\n')) {
    if (!line) continue;
    const [id, email, name, card, city] = line.split('|');
    expect(rows.has(Number(id)), `id ${id} twice`).toBe(false);
    rows.set(Number(id), { email: email!, name: name === '<null>' ? null : name!, card: card!, city: city! });
  }
  return rows;
}

beforeAll(async () => {
  vdb = await veilDb('rewrap', ['writer']);
  const started = Date.now();
  // protected here under version 1 of customer-siv (email), customer-gcm (name) and pan-ff1 (card)
  const [email, name, card] = bindAs(await engineNow(), 'Protect');
  const loadedIds = ROWS - THROUGH_TRIGGER;
  const ids = Array.from({ length: loadedIds }, (_, i) => i + 1);
  const clear = ids.map(cleartext);
  const emails = email!.many(clear.map((c) => c.email)) as string[];
  const names = name!.many(clear.filter((c) => c.name !== null).map((c) => c.name!)) as string[];
  const cards = card!.many(clear.map((c) => c.card)) as string[];
  let n = 0;
  const lines: string[] = [];
  ids.forEach((id, i) => {
    let e = emails[i]!;
    if (UNKNOWN_VERSION_IDS.includes(id)) {
      const bytes = Buffer.from(e, 'base64url');
      bytes.writeUInt32BE(9, 1);
      e = bytes.toString('base64url');
    }
    let nm = clear[i]!.name === null ? null : names[n++]!;
    if (id === NOT_PROTECTED_ID) nm = NOT_PROTECTED;
    loaded.set(id, { email: e, name: nm, card: cards[i]! });
    lines.push(`${id},${e},${nm ?? ''},${cards[i]},${clear[i]!.city}`);
  });
  const load = await psql(
    `CREATE TABLE customers (id int PRIMARY KEY, email text, name varchar(300), card text, city text);
COPY customers (id, email, name, card, city) FROM STDIN WITH (FORMAT csv);
${lines.join('\n')}
\\.
SELECT veil.attach('customers', 'email', 'Customer', 'email');
SELECT veil.attach('customers', 'name', 'Customer', 'name');
SELECT veil.attach('customers', 'card', 'Customer', 'cardNumber');
SELECT veil.grant_writer('${vdb.role.writer}', 'customers');`,
    { database: vdb.db },
  );
  expect(load.code, load.stderr).toBe(0);
  // the last rows through the trigger: veil serve protects them, under version 1 too
  const values = Array.from({ length: THROUGH_TRIGGER }, (_, i) => ROWS - THROUGH_TRIGGER + 1 + i).map((id) => {
    const c = cleartext(id);
    return `(${id}, '${c.email}', ${c.name === null ? 'NULL' : `'${c.name}'`}, '${c.card}', '${c.city}')`;
  });
  await vdb.on(`INSERT INTO customers (id, email, name, card, city) VALUES ${values.join(', ')};`, vdb.role.writer);
  console.log(`db-rewrap: ${ROWS} rows protected and loaded in ${Date.now() - started} ms`);
}, 180_000);

afterAll(async () => {
  await vdb?.close();
});

describe('veil db rewrap of 100,000 rows after a rotation (real PostgreSQL, SIGKILL once)', () => {
  it('re-protects every value under the new primary version, resumes after a kill, and reports the bad values by id', async () => {
    const before = await readTable();
    expect(before.size).toBe(ROWS);
    expect(versionOf(before.get(ROWS)!.email)).toBe(1);
    expect(before.get(ROWS)!.email).not.toContain('@');

    for (const id of ['customer-siv', 'customer-gcm']) {
      const rotated = await vdb.cli('keys', 'rotate', '--id', id, '--data-dir', vdb.veil.dataDir);
      expect(rotated.code, rotated.stderr).toBe(0);
    }
    const client = new pg.Client({ connectionString: databaseUrl(vdb.db) });
    await client.connect();
    const progress = async () =>
      (
        await client
          .query(`SELECT batches::int, last_key, finished_at FROM veil_rewrap.progress WHERE table_name = 'public.customers'`)
          .catch(() => ({ rows: [] }))
      ).rows[0] as { batches: number; last_key: string; finished_at: Date | null } | undefined;
    const t0 = Date.now();
    try {
      // run 1: SIGKILLed once a quarter of the batches committed
      const first = rewrapProcess();
      let exited: string | undefined;
      void first.done.then((r) => (exited = `the first run exited (${r.code}) early: ${r.stderr}${r.stdout}`));
      await waitFor(
        async () => {
          if (exited) throw new Error(exited);
          return ((await progress())?.batches ?? 0) >= 25;
        },
        60_000,
        'the first run commits 25 batches',
      );
      first.child.kill('SIGKILL');
      const killed = await first.done;
      expect(killed.signal).toBe('SIGKILL');
      const atKill = (await progress())!;
      expect(atKill.finished_at).toBeNull();
      expect(atKill.batches).toBeLessThan(100);
      const lastKey = Number(atKill.last_key);
      expect(lastKey).toBe(atKill.batches * 1000);
      // what committed is exactly the checkpoint's rows: up to the last key under version 2, after it under 1
      const mid = await readTable();
      for (const [id, row] of mid) {
        if (UNKNOWN_VERSION_IDS.includes(id)) continue;
        expect(versionOf(row.email), `email of ${id} at the kill`).toBe(id <= lastKey ? 2 : 1);
      }
      console.log(`db-rewrap: killed after ${atKill.batches} batches (${Date.now() - t0} ms)`);

      // run 2 resumes; a writer inserts meanwhile through the trigger (ids below the checkpoint)
      const second = rewrapProcess();
      const write = vdb.on(
        `INSERT INTO customers (id, email, name, card, city) VALUES ${Array.from({ length: 20 }, (_, i) => `(${-1 - i}, 'late${i}@example.com', 'Late ${i}', '4111-1111-1111-1111', 'x')`).join(', ')};`,
        vdb.role.writer,
      );
      const [done] = await Promise.all([second.done, write]);
      const tookMs = Date.now() - t0;
      expect(done.stderr).toContain(`resumed after id="${lastKey}"`);
      expect(done.code, done.stderr).toBe(3);
      expect(done.stdout).toContain('veil db rewrap public.customers: finished');
      const ids = [...done.stdout.matchAll(/^ {2}id="(-?\d+)" column (\w+): ([A-Z_]+)$/gm)].map((m) => `${m[1]} ${m[2]} ${m[3]}`).sort();
      expect(ids).toEqual([...UNKNOWN_VERSION_IDS.map((id) => `${id} email KEY_VERSION_UNKNOWN`), `${NOT_PROTECTED_ID} name PROTECTED_VALUE_INVALID`].sort());
      // never a value: neither the planted ones nor any stored one
      for (const output of [done.stdout, done.stderr, killed.stdout, killed.stderr]) {
        expect(output).not.toContain(NOT_PROTECTED);
        for (const id of UNKNOWN_VERSION_IDS) expect(output).not.toContain(loaded.get(id)!.email.slice(8, 30));
      }
      const nulls = [...loaded.keys(), ...Array.from({ length: THROUGH_TRIGGER }, (_, i) => ROWS - i)].filter((id) => cleartext(id).name === null).length;
      const job = /whole rewrap: rows read (\d+), values rewrapped (\d+), unchanged (\d+), refused (\d+), NULL (\d+), rows updated (\d+), batches (\d+)/.exec(
        done.stdout,
      )!;
      const [rowsRead, rewrapped, unchanged, refused, nullCount, rowsUpdated, batches] = job.slice(1).map(Number);
      // each row read once over both runs: the killed run's open batch was rolled back and done again
      expect({ rowsRead, refused, nullCount, batches }).toEqual({ rowsRead: ROWS, refused: 6, nullCount: nulls, batches: 100 });
      // emails and names rewrapped, cards (FF1, pinned version) unchanged
      expect(rewrapped).toBe(ROWS - UNKNOWN_VERSION_IDS.length + (ROWS - nulls - 1));
      expect(unchanged).toBe(ROWS);
      expect(rowsUpdated).toBe(ROWS);
      console.log(done.stdout);
      console.log(`db-rewrap: ${rowsRead} rows, ${rewrapped} values rewrapped, ${unchanged} unchanged, ${refused} refused; killed and resumed in ${tookMs} ms`);

      // the reader that is not veil: psql, by id
      const after = await readTable('id > 0');
      expect(after.size).toBe(ROWS);
      expect([...after.keys()]).toEqual(Array.from({ length: ROWS }, (_, i) => i + 1));
      const [email, name, card] = bindAs(await engineNow(), 'Unprotect');
      const rows = [...after.entries()];
      const emails = email!.many(rows.map(([, r]) => r.email));
      const named = rows.filter(([, r]) => r.name !== null);
      const names = name!.many(named.map(([, r]) => r.name!));
      const cards = card!.many(rows.map(([, r]) => r.card));
      const problems: string[] = [];
      rows.forEach(([id, r], i) => {
        const c = cleartext(id);
        if (UNKNOWN_VERSION_IDS.includes(id)) {
          if (r.email !== loaded.get(id)!.email) problems.push(`${id}: the email under an unknown version changed`);
        } else {
          if (versionOf(r.email) !== 2) problems.push(`${id}: email under version ${versionOf(r.email)}`);
          if (emails[i] !== c.email) problems.push(`${id}: email does not unprotect to its cleartext`);
        }
        if (cards[i] !== c.card) problems.push(`${id}: card does not unprotect to its cleartext`);
        if (loaded.has(id) && r.card !== loaded.get(id)!.card) problems.push(`${id}: the card (pinned key version) changed`);
        if (r.city !== c.city) problems.push(`${id}: city changed`);
        if ((r.name === null) !== (c.name === null)) problems.push(`${id}: NULL name changed`);
      });
      named.forEach(([id, r], i) => {
        if (id === NOT_PROTECTED_ID) {
          if (r.name !== NOT_PROTECTED) problems.push(`${id}: the value that is not protected changed`);
          return;
        }
        if (versionOf(r.name!) !== 2) problems.push(`${id}: name under version ${versionOf(r.name!)}`);
        if (names[i] !== cleartext(id).name) problems.push(`${id}: name does not unprotect to its cleartext`);
      });
      expect(problems.slice(0, 20)).toEqual([]);

      // the writer's rows during the rewrap: protected by the trigger (the bypass was the rewrap's transaction's only)
      const late = [...(await readTable('id < 0')).entries()];
      expect(late).toHaveLength(20);
      expect(email!.many(late.map(([, r]) => r.email))).toEqual(late.map(([id]) => `late${-id - 1}@example.com`));
      expect(late.every(([, r]) => !r.email.includes('@'))).toBe(true);

      // a finished rewrap is reported as finished, nothing read; exit 3 still says values were refused
      const again = await vdb.cli(...REWRAP_ARGS, '--data-dir', vdb.veil.dataDir);
      expect(again.code).toBe(3);
      expect(again.stdout).toContain('already finished');
      expect(again.stdout).not.toContain('this run:');
    } finally {
      await client.end();
    }
  }, 120_000);
});
