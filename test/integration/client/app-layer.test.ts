import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DataTypes, Model, Sequelize, type ModelStatic } from 'sequelize';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VeilClient, VeilClientError, type VeilClientOptions } from 'veil/client';
import { protectModel } from 'veil/client/sequelize';
import { freePorts, ROOT } from '../../helpers/processes.ts';

/**
 * The application layer against real parts: `veil serve` as a child process, PostgreSQL from
 * scripts/pg-env.sh (the global setup), Sequelize with veil's hooks, and psql as a second client
 * that sees what the table really holds. /transform calls are counted by a proxy in front of
 * veil (exact), and cross-checked against veil's own /metrics.
 */

const exec = promisify(execFile);
const FIELDS = { email: 'email', cardNumber: 'cardNumber', nationalId: 'nationalId', name: 'name' };

let veil: ChildProcess;
let veilUrl: string;
let proxyUrl: string;
let proxy: Server;
let transformCalls = 0;
let dataDir: string;
let secret: string;
let database: string;
let dbUrl: string;
let sequelize: Sequelize;

async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become ready`);
}

async function psql(sql: string, db = database): Promise<string[][]> {
  const { stdout } = await exec('psql', [
    '-X',
    '-A',
    '-t',
    '-F',
    '\t',
    '-v',
    'ON_ERROR_STOP=1',
    '-h',
    process.env.PGHOST!,
    '-p',
    process.env.PGPORT!,
    '-U',
    process.env.PGUSER!,
    '-d',
    db,
    '-c',
    sql,
  ]);
  return stdout
    .split('\n')
    .filter((l) => l.length)
    .map((l) => l.split('\t'));
}

/** veil's own count of answered /transform calls, read from /metrics */
async function metricTransformCalls(): Promise<number> {
  const text = await (await fetch(`${veilUrl}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^veil_http_requests_total\{([^}]*)\} (\d+)$/gm)) if (m[1]!.includes('route="/transform"')) n += Number(m[2]);
  return n;
}

/** the /transform calls `work` makes, counted at the proxy */
async function calls(work: () => Promise<unknown>): Promise<number> {
  const before = transformCalls;
  await work();
  return transformCalls - before;
}

function client(options: Partial<VeilClientOptions> = {}): VeilClient {
  return new VeilClient({ url: proxyUrl, clientId: 'veil-dev', clientSecret: secret, ...options });
}

class Customer extends Model {
  declare id: number;
  declare email: string;
  declare cardNumber: string | null;
  declare nationalId: string | null;
  declare name: string;
  declare plan: string;
}

function defineCustomer(name: string, veilClient: VeilClient, roles: { protect: string; unprotect: string }): ModelStatic<Customer> {
  const model = sequelize.define<Customer>(
    name,
    {
      id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
      email: { type: DataTypes.TEXT, allowNull: false },
      cardNumber: { type: DataTypes.TEXT, field: 'card_number' },
      nationalId: { type: DataTypes.TEXT, field: 'national_id' },
      name: { type: DataTypes.TEXT, allowNull: false },
      plan: { type: DataTypes.TEXT, allowNull: false, defaultValue: 'free' },
    },
    { tableName: 'customers', underscored: true, timestamps: false },
  );
  protectModel(model, veilClient, { class: 'Customer', fields: FIELDS, roles });
  return model;
}

const person = (i: number) => ({
  email: `person${i}@example.com`,
  cardNumber: `4111 1111 1111 ${String(1000 + i).padStart(4, '0')}`,
  nationalId: `AB${String(100000 + i)}C`,
  name: `Person Number ${i}`,
  plan: i % 2 ? 'pro' : 'free',
});

/** what the table holds for these customers, as psql sees it */
async function stored(ids: number[], db = database): Promise<Map<number, string[]>> {
  const rows = await psql(
    `SELECT id, email, coalesce(card_number, ''), coalesce(national_id, ''), name, plan FROM customers WHERE id IN (${ids.join(',')}) ORDER BY id`,
    db,
  );
  return new Map(rows.map(([id, ...rest]) => [Number(id), rest]));
}

function expectOnlyProtected(row: string[] | undefined, clear: ReturnType<typeof person>): void {
  expect(row).toBeDefined();
  const [email, card, nationalId, name, plan] = row!;
  expect(email).not.toBe(clear.email);
  expect(email).not.toContain('@');
  expect(email).toMatch(/^[A-Za-z0-9_-]{30,}$/);
  expect(name).not.toContain('Person');
  expect(card).not.toBe(clear.cardNumber);
  // FF1 with keepFirst 6 / keepLast 4: the format stays, the middle digits change
  expect(card).toMatch(/^4111 11\d\d \d{4} \d{4}$/);
  expect(nationalId).not.toBe(clear.nationalId);
  expect(nationalId).toHaveLength(clear.nationalId.length);
  expect(plan).toBe(clear.plan);
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'veil-app-layer-'));
  const [port, proxyPort] = [await freePorts(1), await freePorts(1)];
  veilUrl = `http://127.0.0.1:${port}`;
  veil = spawn(join(ROOT, 'bin/veil'), ['serve', '--port', String(port), '--data-dir', dataDir], {
    env: { ...process.env, VEIL_LOG_LEVEL: 'warn', VEIL_WORKERS: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  veil.stderr!.resume();
  proxy = createServer((req, res) => {
    if (req.url === '/transform') transformCalls++;
    const upstream = request(`${veilUrl}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((r) => proxy.listen(proxyPort, '127.0.0.1', r));
  proxyUrl = `http://127.0.0.1:${proxyPort}`;
  await waitReady(`${veilUrl}/readyz`);
  secret = (await readFile(join(dataDir, 'dev-client.secret'), 'utf8')).trim();

  database = `app_layer_${process.pid}_${Date.now()}`;
  await psql(`CREATE DATABASE ${database}`, 'postgres');
  dbUrl = `postgres://${process.env.PGUSER}@${process.env.PGHOST}:${process.env.PGPORT}/${database}`;
  sequelize = new Sequelize(dbUrl, { logging: false });
  const setup = defineCustomer('CustomerSetup', client(), { protect: 'ingest', unprotect: 'fraud' });
  await setup.sync();
}, 90_000);

afterAll(async () => {
  await sequelize?.close();
  proxy?.close();
  if (veil && veil.exitCode === null) veil.kill('SIGKILL');
  if (database) await psql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`, 'postgres').catch(() => undefined);
  await rm(dataDir, { recursive: true, force: true });
});

describe('application layer: veil/client + Sequelize against veil serve and PostgreSQL', () => {
  it('create: one /transform call; the table holds only protected values; the instance keeps the cleartext', async () => {
    const Customers = defineCustomer('CustomerCreate', client(), { protect: 'ingest', unprotect: 'fraud' });
    const alice = person(1);
    let created!: Customer;
    expect(await calls(async () => (created = await Customers.create(alice)))).toBe(1);
    expect(created.email).toBe(alice.email);
    expect(created.cardNumber).toBe(alice.cardNumber);
    expect(created.changed()).toBe(false);
    expectOnlyProtected((await stored([created.id])).get(created.id), alice);
  });

  it('bulkCreate of 50 rows: exactly one /transform call; find and findAll: one call each, cleartext back', async () => {
    const Customers = defineCustomer('CustomerBulk', client(), { protect: 'ingest', unprotect: 'fraud' });
    const people = Array.from({ length: 50 }, (_, i) => person(100 + i));
    let rows: Customer[] = [];
    expect(await calls(async () => (rows = await Customers.bulkCreate(people)))).toBe(1);
    expect(rows.map((r) => r.email)).toEqual(people.map((p) => p.email));
    const table = await stored(rows.map((r) => r.id));
    rows.forEach((r, i) => expectOnlyProtected(table.get(r.id), people[i]!));

    const ids = rows.map((r) => r.id);
    let found: Customer[] = [];
    expect(await calls(async () => (found = await Customers.findAll({ where: { id: ids }, order: [['id', 'ASC']] })))).toBe(1);
    expect(found.map((f) => ({ email: f.email, cardNumber: f.cardNumber, nationalId: f.nationalId, name: f.name, plan: f.plan }))).toEqual(people);
    // as loaded: the cleartext is not a pending change
    expect(found.every((f) => f.changed() === false)).toBe(true);

    let raw: Record<string, unknown>[] = [];
    expect(
      await calls(
        async () => (raw = (await Customers.findAll({ where: { id: ids }, order: [['id', 'ASC']], raw: true })) as unknown as Record<string, unknown>[]),
      ),
    ).toBe(1);
    expect(raw.map((r) => r.email)).toEqual(people.map((p) => p.email));

    let one: Customer | null = null;
    expect(await calls(async () => (one = await Customers.findByPk(ids[7]!)))).toBe(1);
    expect(one!.nationalId).toBe(people[7]!.nationalId);
    expect(await calls(async () => Customers.findAll({ where: { id: -1 } }))).toBe(0);
  });

  it('update: one call for the changed mapped fields, none when only unmapped ones change; static update too', async () => {
    const Customers = defineCustomer('CustomerUpdate', client(), { protect: 'ingest', unprotect: 'fraud' });
    const created = await Customers.create(person(200));
    const row = (await Customers.findByPk(created.id))!;
    expect(await calls(async () => row.update({ plan: 'enterprise' }))).toBe(0);
    expect(await calls(async () => row.update({ email: 'renamed@example.com', name: 'Renamed Person' }))).toBe(1);
    expect(row.email).toBe('renamed@example.com');
    const [email, name, plan] = (await psql(`SELECT email, name, plan FROM customers WHERE id = ${created.id}`))[0]!;
    expect(email).not.toContain('renamed');
    expect(name).not.toContain('Renamed');
    expect(plan).toBe('enterprise');
    // the card number, unchanged, was not rewritten: still the protected form from the create
    expect((await stored([created.id])).get(created.id)![1]).toMatch(/^4111 11\d\d \d{4} \d{4}$/);

    expect(await calls(async () => Customers.update({ email: 'static@example.com' }, { where: { id: created.id } }))).toBe(1);
    expect((await psql(`SELECT email FROM customers WHERE id = ${created.id}`))[0]![0]).not.toContain('static');
    expect((await Customers.findByPk(created.id))!.email).toBe('static@example.com');

    // individualHooks: one call protects the values, one unprotects the rows Sequelize loads; the
    // values protected in beforeBulkUpdate are not protected again per row (else this would read back a protected form)
    expect(await calls(async () => Customers.update({ name: 'Hooked' }, { where: { id: created.id }, individualHooks: true }))).toBe(2);
    expect((await Customers.findByPk(created.id))!.name).toBe('Hooked');
  });

  it('splits at the limits it is given: 60 rows × 4 fields with 100 instances per call is 3 calls', async () => {
    const Customers = defineCustomer('CustomerSplit', client({ limits: { instancesPerCall: 100 } }), { protect: 'ingest', unprotect: 'fraud' });
    const people = Array.from({ length: 60 }, (_, i) => person(300 + i));
    let rows: Customer[] = [];
    expect(await calls(async () => (rows = await Customers.bulkCreate(people)))).toBe(3);
    let found: Customer[] = [];
    expect(await calls(async () => (found = await Customers.findAll({ where: { id: rows.map((r) => r.id) }, order: [['id', 'ASC']] })))).toBe(3);
    expect(found.map((f) => f.email)).toEqual(people.map((p) => p.email));
  });

  it('a role without Unprotect: a typed error with code, status and pointer, and no value in it', async () => {
    const Customers = defineCustomer('CustomerIngestOnly', client(), { protect: 'ingest', unprotect: 'ingest' });
    const created = await Customers.create(person(400));
    const table = (await stored([created.id])).get(created.id)!;
    const error = (await Customers.findByPk(created.id).catch((e: unknown) => e)) as VeilClientError;
    expect(error).toBeInstanceOf(VeilClientError);
    expect(error).toMatchObject({ code: 'ACTION_NOT_GRANTED', status: 403, retriable: false });
    expect(error.pointer).toMatch(/^\/requests\/0\/instances\/\d+/);
    expect(error.details.length).toBeGreaterThan(0);
    expect(error.details[0]).toMatchObject({ code: 'ACTION_NOT_GRANTED', className: 'Customer' });
    const shown = `${error.message}\n${JSON.stringify(error)}\n${error.stack}`;
    for (const value of [...Object.values(person(400)).filter((v) => v.length > 4), ...table.slice(0, 4)]) expect(shown).not.toContain(value);
  });

  it('fails closed: with veil unreachable nothing is written; an upsert with mapped fields is refused', async () => {
    const [closedPort] = [await freePorts(1)];
    const down = new VeilClient({
      url: `http://127.0.0.1:${closedPort}`,
      clientId: 'veil-dev',
      clientSecret: secret,
      retry: { maxAttempts: 2, baseDelayMs: 1 },
    });
    const Customers = defineCustomer('CustomerDown', down, { protect: 'ingest', unprotect: 'fraud' });
    const before = Number((await psql('SELECT count(*) FROM customers'))[0]![0]);
    await expect(Customers.create(person(500))).rejects.toMatchObject({ code: 'NETWORK_ERROR' });
    await expect(Customers.bulkCreate([person(501), person(502)])).rejects.toMatchObject({ code: 'NETWORK_ERROR' });
    const Upserting = defineCustomer('CustomerUpsert', client(), { protect: 'ingest', unprotect: 'fraud' });
    await expect(Upserting.upsert({ id: 999_999, ...person(503) })).rejects.toMatchObject({ code: 'OPERATION_UNSUPPORTED', pointer: '/email' });
    expect(Number((await psql('SELECT count(*) FROM customers'))[0]![0])).toBe(before);
    expect((await psql("SELECT count(*) FROM customers WHERE email LIKE '%@%' OR name LIKE 'Person%'"))[0]![0]).toBe('0');
  });

  it("veil's own /metrics agree with the proxy's count of /transform calls", async () => {
    let metric = 0;
    for (let i = 0; i < 50 && metric !== transformCalls; i++) {
      metric = await metricTransformCalls();
      if (metric !== transformCalls) await new Promise((r) => setTimeout(r, 50));
    }
    expect(metric).toBe(transformCalls);
  });
});

describe('examples/app-layer (as docs/client.md and its README run it)', () => {
  // docs/client.md and examples/app-layer/README.md give the commands this test runs: test/docs/doc-examples.test.ts
  let app: ChildProcess;
  let appUrl: string;
  let appErr = '';
  let appDb: string;

  beforeAll(async () => {
    // its own database, as on a fresh clone: the example creates its table
    appDb = `${database}_example`;
    await psql(`CREATE DATABASE ${appDb}`, 'postgres');
    const port = await freePorts(1);
    appUrl = `http://127.0.0.1:${port}`;
    app = spawn(join(ROOT, 'scripts/node22'), ['examples/app-layer/server.ts'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        VEIL_URL: veilUrl,
        VEIL_CLIENT_SECRET_FILE: join(dataDir, 'dev-client.secret'),
        DATABASE_URL: dbUrl.replace(new RegExp(`/${database}$`), `/${appDb}`),
        PORT: String(port),
      },
    });
    app.stdout!.on('data', (d) => (appErr += String(d)));
    app.stderr!.on('data', (d) => (appErr += String(d)));
    for (let i = 0; i < 200 && !appErr.includes('app-layer example on'); i++) await new Promise((r) => setTimeout(r, 100));
    expect(appErr).toContain('app-layer example on');
  }, 60_000);
  afterAll(async () => {
    if (app && app.exitCode === null) {
      const exited = new Promise((r) => app.once('exit', r));
      app.kill('SIGTERM');
      await exited;
    }
    if (appDb) await psql(`DROP DATABASE IF EXISTS ${appDb} WITH (FORCE)`, 'postgres').catch(() => undefined);
  });

  it('stores customers protected, serves them in clear, finds one by email', async () => {
    const post = await fetch(`${appUrl}/customers`, { method: 'POST', body: JSON.stringify([person(600), person(601)]) });
    expect(post.status).toBe(201);
    const created = (await post.json()) as { id: number; email: string }[];
    expect(created.map((c) => c.email)).toEqual([person(600).email, person(601).email]);
    const table = await stored(
      created.map((c) => c.id),
      appDb,
    );
    created.forEach((c, i) => expectOnlyProtected(table.get(c.id), person(600 + i)));
    const list = (await (await fetch(`${appUrl}/customers`)).json()) as { email: string }[];
    expect(list.map((c) => c.email)).toEqual(expect.arrayContaining([person(600).email, person(601).email]));
    const byEmail = (await (await fetch(`${appUrl}/customers?email=${encodeURIComponent(person(601).email)}`)).json()) as { id: number; name: string }[];
    expect(byEmail).toEqual([expect.objectContaining({ id: created[1]!.id, name: person(601).name })]);
    const patched = (await (
      await fetch(`${appUrl}/customers/${created[0]!.id}`, { method: 'PATCH', body: JSON.stringify({ name: 'Patched Name' }) })
    ).json()) as { name: string };
    expect(patched.name).toBe('Patched Name');
    expect((await psql(`SELECT name FROM customers WHERE id = ${created[0]!.id}`, appDb))[0]![0]).not.toContain('Patched');
    // the example's own output never shows a value
    for (const value of [person(600).email, person(601).email, 'Patched Name']) expect(appErr).not.toContain(value);
  });
});
