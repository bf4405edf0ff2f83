// npm run bench:db — rows/s of a 10,000-row INSERT … SELECT into a table whose two mapped columns
// the veil trigger protects, over HTTP (one POST /transform per row, one kept-alive connection)
// and over veil's local Unix socket (one PROTECT frame per row on one persistent connection,
// VEIL_DB_SOCKET) and with leased keys (the trigger protects locally with keys veil leases it over
// the socket, VEIL_DB_SOCKET_LEASES=on, and reports the values for veil's audit), beside the same
// INSERT into the same table without the trigger, and beside a
// set-based load that protects each column with one veil.protect_many call (split at 1,000 values
// per call) into a table without the trigger — all in the same run, against a real PostgreSQL 15
// (scripts/pg-env.sh: VEIL_PG_PORT, VEIL_PG_DIR) and a real `veil serve` (one process) on the
// example configuration.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { configureSql } from '../src/db/configure-sql.ts';
import { installSql } from '../src/db/install-sql.ts';
import { runPsql } from '../src/db/psql.ts';
import { fmt, ratio } from './measure.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 10_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const root = new URL('..', import.meta.url).pathname;
const pgScript = join(root, 'scripts/pg-env.sh');

const portOpen = async (port: number) =>
  new Promise<boolean>((resolve) => {
    void import('node:net').then(({ connect }) => {
      const s = connect({ port, host: '127.0.0.1' });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
  });

const pgPort = Number(process.env.VEIL_PG_PORT ?? 15432);
const pgWasUp = await portOpen(pgPort);
const { stdout: pgEnv } = await promisify(execFile)(pgScript, ['start'], { timeout: 600_000 });
const serverUrl = /^VEIL_PG_URL=(.*)$/m.exec(pgEnv)![1]!;
const database = `veil_bench_${process.pid}`;
const dbUrl = serverUrl.replace(/\/[^/]*$/, `/${database}`);

const veilPort = await new Promise<number>((resolve) => {
  void import('node:net').then(({ createServer }) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
});
const dataDir = await mkdtemp(join(tmpdir(), 'veil-bench-db-'));
// the socket's directory and file belong to the database server's OS group (its data directory's)
const pgGid = (await stat(join(process.env.VEIL_PG_DIR ?? '/tmp/veil-pg-env', 'data'))).gid;
const socketDir = await mkdtemp(join(tmpdir(), 'veil-bench-sock-'));
await chown(socketDir, process.getuid!(), pgGid);
await chmod(socketDir, 0o750);
const socketPath = join(socketDir, 'db.sock');
// the example configuration, with a per-client rate limit above what one row-at-a-time trigger
// asks for (the default, 500 calls/s, would cap the trigger at 500 rows/s: see docs/database.md,
// "How it behaves")
const configFile = join(dataDir, 'config.yaml');
await writeFile(
  configFile,
  `${await readFile(join(root, 'config/example.yaml'), 'utf8')}\nservice:\n  rateLimit: { transformPerSecond: 100000, transformBurst: 100000 }\n`,
);
const veil: ChildProcess = spawn(
  process.execPath,
  [join(root, 'src/cli/main.ts'), 'serve', '--config', configFile, '--data-dir', dataDir, '--port', String(veilPort)],
  {
    env: {
      ...process.env,
      VEIL_LOG_LEVEL: 'warn',
      VEIL_MASTER_KEY: 'c'.repeat(64),
      VEIL_DB_SOCKET: socketPath,
      VEIL_DB_SOCKET_GROUP: String(pgGid),
      VEIL_DB_SOCKET_LEASES: 'on',
    },
    stdio: ['ignore', 'ignore', 'ignore'],
  },
);

async function psql(url: string, script: string, singleTransaction = false): Promise<string> {
  const r = await runPsql(url, script, { singleTransaction });
  if (r.code !== 0) throw new Error(`psql failed: ${r.stderr}`);
  return r.stderr;
}

/** The rows of one query, tuples only. */
async function psqlRows(query: string): Promise<string[]> {
  const r = await runPsql(dbUrl, `\\pset tuples_only on\n\\pset format unaligned\n${query};`, { singleTransaction: false });
  if (r.code !== 0) throw new Error(`psql failed: ${r.stderr}`);
  return r.stdout.split('\n').filter(Boolean);
}

/** Lines holding every one of `needles` in a log and its rotated files (.1 … .keep); undefined when the log cannot be read. */
async function countLines(path: string, keep: number, needles: string[]): Promise<number | undefined> {
  let count = 0;
  for (let i = 0; i <= keep; i++) {
    let text: string;
    try {
      text = await readFile(i ? `${path}.${i}` : path, 'utf8');
    } catch (e) {
      if (i === 0) return undefined;
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      return undefined;
    }
    for (const line of text.split('\n')) if (needles.every((n) => line.includes(n))) count++;
  }
  return count;
}

/** Runs one statement in a fresh session and returns its duration as PostgreSQL measured it. */
async function timed(statement: string): Promise<number> {
  const notices = await psql(
    dbUrl,
    `DO $bench$ DECLARE t timestamptz := clock_timestamp(); BEGIN
    ${statement};
    RAISE NOTICE 'elapsed_ms=%', 1000 * extract(epoch FROM clock_timestamp() - t);
  END $bench$;`,
  );
  return Number(/elapsed_ms=([\d.]+)/.exec(notices)![1]);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  for (
    let i = 0;
    i < 300 &&
    !(await fetch(`http://127.0.0.1:${veilPort}/readyz`).then(
      (r) => r.ok,
      () => false,
    ));
    i++
  )
    await new Promise((r) => setTimeout(r, 100));
  const secret = (await readFile(join(dataDir, 'dev-client.secret'), 'utf8')).trim();
  await psql(serverUrl.replace(/\/[^/]*$/, '/postgres'), `CREATE DATABASE ${database};`);
  await psql(dbUrl, installSql(), true);
  await psql(dbUrl, configureSql({ veilUrl: `http://127.0.0.1:${veilPort}`, clientId: 'veil-dev', clientSecret: secret, protectRole: 'ingest' }), true);
  await psql(
    dbUrl,
    `
    CREATE TABLE source AS SELECT g AS id, 'user' || g || '@example.com' AS email, 'Person ' || g AS name, 'City ' || (g % 50) AS city
      FROM generate_series(1, ${ROWS}) g;
    CREATE TABLE plain (id int PRIMARY KEY, email text, name text, city text);
    CREATE TABLE guarded (LIKE plain INCLUDING ALL);
    CREATE TABLE preprotected (LIKE plain INCLUDING ALL);
    SELECT veil.attach('guarded', 'email', 'Customer', 'email');
    SELECT veil.attach('guarded', 'name', 'Customer', 'name');
    -- the bench loads far more than the default 60,000 values per minute per role
    SELECT veil.set_rate_limit(session_user, 1000000000);
    VACUUM ANALYZE source;`,
  );

  const statements = {
    plain: 'INSERT INTO plain SELECT * FROM source',
    trigger: 'INSERT INTO guarded SELECT * FROM source',
    socket: 'INSERT INTO guarded SELECT * FROM source',
    leased: 'INSERT INTO guarded SELECT * FROM source',
    setBased: `INSERT INTO preprotected (id, email, name, city)
      SELECT z.id, z.email, z.name, s.city
      FROM (SELECT array_agg(id ORDER BY id) AS ids, array_agg(email ORDER BY id) AS emails, array_agg(name ORDER BY id) AS names FROM source) a
      CROSS JOIN LATERAL unnest(a.ids, veil.protect_many('Customer', 'email', a.emails), veil.protect_many('Customer', 'name', a.names)) AS z(id, email, name)
      JOIN source s ON s.id = z.id`,
  };
  const tables = { plain: 'plain', trigger: 'guarded', socket: 'guarded', leased: 'guarded', setBased: 'preprotected' } as const;
  // the trigger's runs over HTTP, over the socket and with leased keys differ only in veil.settings
  type Way = 'http' | 'socket' | 'leased';
  const use = (way: Way) => psql(dbUrl, `SELECT veil.configure_socket(${way === 'http' ? 'NULL' : `'${socketPath}'`}, lease => ${way === 'leased'});`);
  const wayOf = (key: keyof typeof statements): Way => (key === 'socket' ? 'socket' : key === 'leased' ? 'leased' : 'http');
  const times: Record<keyof typeof statements, number[]> = { plain: [], trigger: [], socket: [], leased: [], setBased: [] };
  // warm veil (JIT, keys) and PostgreSQL, every way
  for (const way of ['http', 'socket', 'leased'] as const) {
    await use(way);
    await timed('INSERT INTO guarded SELECT * FROM source WHERE id <= 200');
    await psql(dbUrl, 'TRUNCATE guarded;');
  }
  for (let run = 0; run < RUNS; run++) {
    for (const key of Object.keys(statements) as (keyof typeof statements)[]) {
      await use(wayOf(key));
      await psql(dbUrl, `TRUNCATE ${tables[key]}; CHECKPOINT;`);
      times[key].push(await timed(statements[key]));
    }
  }
  const check = await psql(
    dbUrl,
    `DO $c$ BEGIN
    IF (SELECT count(*) FROM guarded WHERE email LIKE 'user%' OR name LIKE 'Person%') > 0 OR (SELECT count(*) FROM guarded) <> ${ROWS} THEN RAISE EXCEPTION 'trigger did not protect'; END IF;
    RAISE NOTICE 'same=%', (SELECT count(*) FROM guarded g JOIN preprotected p USING (id) WHERE g.email = p.email);
    PERFORM veil.map_role(session_user, 'fraud');
    RAISE NOTICE 'clear=%', (SELECT count(*) FROM guarded g JOIN source s USING (id) WHERE veil.unprotect('Customer', 'name', g.name) = s.name AND g.id % 10 = 0);
  END $c$;`,
  );
  // every row audited: one pg_veil record per trigger row of every way (read from the files, which
  // rotate at 64 MiB and are shared by the cluster's databases), and veil's audit holds every value
  // sealed under a lease (protect calls over HTTP or the socket's round trip are not in veil's
  // audit, as for POST /transform: pg_veil has them)
  const triggerRows = 3 * (200 + RUNS * ROWS);
  const [pgData] = await psqlRows('SHOW data_directory');
  const dbRecords = await countLines(join(pgData!, 'pg_veil', 'audit.log'), 4, [`"database":"${database}"`, '"function":"trigger"', '"outcome":"ok"']);
  const leasedValues = (await Promise.all([0, 1, 2].map((i) => readFile(join(dataDir, i ? `audit.log.${i}` : 'audit.log'), 'utf8').catch(() => ''))))
    .join('\n')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { requestId: string; outcome: string; fields: { action: string; count: number }[] })
    .filter((e) => e.requestId.startsWith('db-socket:') && e.outcome === 'ok')
    .reduce((n, e) => n + e.fields.filter((f) => f.action === 'Protect').reduce((m, f) => m + f.count, 0), 0);
  const rate = (key: keyof typeof statements) => (ROWS * 1000) / median(times[key]);
  const [plain, trigger, socket, leased, setBased] = [rate('plain'), rate('trigger'), rate('socket'), rate('leased'), rate('setBased')];
  console.log(`bench:db — INSERT … SELECT of ${fmt(ROWS)} rows, 2 protected columns (Customer.email AES-SIV, Customer.name AES-GCM); median of ${RUNS} runs`);
  console.log(`  without trigger (baseline)          ${fmt(plain).padStart(10)} rows/s   ${median(times.plain).toFixed(1)} ms`);
  console.log(
    `  through the veil trigger, HTTP      ${fmt(trigger).padStart(10)} rows/s   ${median(times.trigger).toFixed(1)} ms   baseline/trigger ${ratio(plain, trigger)}`,
  );
  console.log(
    `  through the veil trigger, socket    ${fmt(socket).padStart(10)} rows/s   ${median(times.socket).toFixed(1)} ms   baseline/socket ${ratio(plain, socket)}, ${ratio(socket, trigger)} the HTTP trigger's rate, ${ratio(socket, setBased)} the set-based rate`,
  );
  console.log(
    `  through the veil trigger, leased    ${fmt(leased).padStart(10)} rows/s   ${median(times.leased).toFixed(1)} ms   baseline/leased ${ratio(plain, leased)}, ${ratio(leased, trigger)} the HTTP trigger's rate, ${ratio(leased, setBased)} the set-based rate`,
  );
  console.log(
    `  set-based, veil.protect_many        ${fmt(setBased).padStart(10)} rows/s   ${median(times.setBased).toFixed(1)} ms   baseline/set-based ${ratio(plain, setBased)}, ${ratio(setBased, trigger)} the trigger's rate`,
  );
  // the guarded table holds the leased run's rows: the backend's own AES-SIV equals veil's, its AES-GCM unprotects through veil
  console.log(
    `  (audit: ${dbRecords === undefined ? 'unreadable' : fmt(dbRecords)} pg_veil trigger records for ${fmt(triggerRows)} trigger rows (HTTP, socket, leased); veil audited ${fmt(leasedValues)} leased values for ${fmt(2 * (200 + RUNS * ROWS))} sealed)`,
  );
  console.log(
    `  (leased: ${/same=(\d+)/.exec(check)![1]} of ${fmt(ROWS)} deterministic emails equal veil's set-based output; ${/clear=(\d+)/.exec(check)![1]} of ${fmt(ROWS / 10)} randomized names sampled unprotect through veil)`,
  );
} finally {
  await psql(serverUrl.replace(/\/[^/]*$/, '/postgres'), `DROP DATABASE IF EXISTS ${database} WITH (FORCE);`).catch(() => undefined);
  veil.kill('SIGTERM');
  await rm(dataDir, { recursive: true, force: true });
  await rm(socketDir, { recursive: true, force: true });
  if (!pgWasUp) await promisify(execFile)(pgScript, ['stop']).catch(() => undefined);
}
