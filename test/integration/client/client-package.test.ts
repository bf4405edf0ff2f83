import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { node20 } from '../../helpers/node20.ts';
import { databaseUrl, psql } from '../../helpers/postgres.ts';
import { freePorts, ROOT } from '../../helpers/processes.ts';

/**
 * The client packages as an application gets them: `npm pack` of the workspace packages,
 * installed into empty applications, imported as ESM and required as CommonJS on Node 20 and
 * Node 22, typed by TypeScript in both module kinds, and run against a real `veil serve` (and, for
 * @veil/sequelize, Sequelize and pg from the registry on the tests' PostgreSQL).
 */

const exec = promisify(execFile);
let app: string;
let ormApp: string;
let prismaApp: string;
let packs: string;
let tarball: string;
let veil: ChildProcess;
let dataDir: string;
let env: Record<string, string>;

const ESM = `import { VeilClient, VeilClientError } from '@veil/client';
const veil = new VeilClient({ url: process.env.VEIL_URL, clientId: 'veil-dev', clientSecret: process.env.VEIL_SECRET });
const value = 'alice@example.com';
const [protectedValue] = await veil.protect([{ className: 'Customer', propertyName: 'email', value }], { role: 'ingest' });
const [clear] = await veil.unprotect([{ className: 'Customer', propertyName: 'email', value: protectedValue }], { role: 'fraud' });
let refused;
try {
  await new VeilClient({ url: process.env.VEIL_URL, clientId: 'veil-dev', clientSecret: 'wrong' }).protect([{ className: 'Customer', propertyName: 'email', value }]);
} catch (e) {
  refused = { typed: e instanceof VeilClientError, code: e.code, leaks: String(e.message).includes(value) };
}
console.log(JSON.stringify({ changed: protectedValue !== value, roundTrip: clear === value, refused }));
`;
const CJS = ESM.replace(
  "import { VeilClient, VeilClientError } from '@veil/client';",
  "const { VeilClient, VeilClientError } = require('@veil/client');",
).replace(/^(const \[protectedValue\][\s\S]*)$/m, '(async () => {\n$1\n})();');

/** the same calls, typed: compiled by TypeScript with module NodeNext as ESM (.mts) and CommonJS (.cts) */
const TYPED = `import { VeilClient, VeilClientError, type VeilClientOptions } from '@veil/client';
const options: VeilClientOptions = { url: 'http://127.0.0.1:8080', clientId: 'veil-dev', clientSecret: 's', role: 'ingest' };
const veil = new VeilClient(options);
export async function run(): Promise<string> {
  try {
    const [out] = await veil.protect([{ className: 'Customer', propertyName: 'email', value: 'a@b.c' }]);
    return out!;
  } catch (e) {
    return e instanceof VeilClientError ? e.code : 'other';
  }
}
`;

/** a Sequelize model with veil's hooks: what the table holds (read by SQL), what the model reads, and a refusal */
const ORM = `import { VeilClient, VeilClientError } from '@veil/client';
import { protectModel } from '@veil/sequelize';
import { DataTypes, Sequelize } from 'sequelize';
const table = process.env.TABLE;
const sequelize = new Sequelize(process.env.DB_URL, { logging: false });
const Customer = sequelize.define('Customer', {
  id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
  email: { type: DataTypes.TEXT, allowNull: false },
  name: { type: DataTypes.TEXT, allowNull: false },
}, { tableName: table, timestamps: false });
const veil = new VeilClient({ url: process.env.VEIL_URL, clientId: 'veil-dev', clientSecret: process.env.VEIL_SECRET });
protectModel(Customer, veil, { class: 'Customer', fields: { email: 'email', name: 'name' }, roles: { protect: 'ingest', unprotect: 'fraud' } });
await Customer.sync({ force: true });
const created = await Customer.create({ email: 'alice@example.com', name: 'Alice Example' });
const [[stored]] = await sequelize.query('SELECT email, name FROM ' + table + ' WHERE id = ' + created.id);
const found = await Customer.findByPk(created.id);
let refused;
try {
  await Customer.create({ email: 42, name: 'x' });
} catch (e) {
  refused = { typed: e instanceof VeilClientError, code: e.code };
}
console.log(JSON.stringify({ stored, read: { email: found.email, name: found.name }, refused }));
await sequelize.close();
`;
const ORM_CJS = ORM.replace(
  "import { VeilClient, VeilClientError } from '@veil/client';\nimport { protectModel } from '@veil/sequelize';\nimport { DataTypes, Sequelize } from 'sequelize';",
  "const { VeilClient, VeilClientError } = require('@veil/client');\nconst { protectModel } = require('@veil/sequelize');\nconst { DataTypes, Sequelize } = require('sequelize');",
).replace(/^(await Customer\.sync[\s\S]*)$/m, '(async () => {\n$1\n})();');
/** the same with Prisma Client 7 (driver adapter for pg: no native query engine) and the veil extension */
const PRISMA_TABLE = `veil_prisma_${process.pid}`;
const PRISMA_SCHEMA = `generator client {
  provider = "prisma-client-js"
}

datasource db {
  provider = "postgresql"
}

model Customer {
  id    Int    @id @default(autoincrement())
  email String
  name  String
  @@map("${PRISMA_TABLE}")
}
`;
const PRISMA = `import { PrismaClient } from '@prisma/client';
import { PrismaPg } from '@prisma/adapter-pg';
import { VeilClient, VeilClientError } from '@veil/client';
import { veilPrisma } from '@veil/prisma';
const base = new PrismaClient({ adapter: new PrismaPg({ connectionString: process.env.DB_URL }) });
const veil = new VeilClient({ url: process.env.VEIL_URL, clientId: 'veil-dev', clientSecret: process.env.VEIL_SECRET });
const prisma = base.$extends(veilPrisma(veil, { models: { Customer: { class: 'Customer', fields: { email: 'email', name: 'name' } } }, roles: { protect: 'ingest', unprotect: 'fraud' } }));
const created = await prisma.customer.create({ data: { email: 'alice@example.com', name: 'Alice Example' } });
const [stored] = await base.$queryRawUnsafe('SELECT email, name FROM ${PRISMA_TABLE} WHERE id = $1', created.id);
const found = await prisma.customer.findUnique({ where: { id: created.id } });
let refused;
try {
  await prisma.customer.update({ where: { id: created.id }, data: { email: { set: 'mallory@example.com' } } });
} catch (e) {
  refused = { typed: e instanceof VeilClientError, code: e.code };
}
console.log(JSON.stringify({ id: created.id, created: { email: created.email, name: created.name }, stored, read: { email: found.email, name: found.name }, refused }));
await base.$disconnect();
`;
const PRISMA_CJS = PRISMA.replace(/^import \{ ([^}]+) \} from ('[^']+');$/gm, 'const { $1 } = require($2);').replace(
  /^(const created = await[\s\S]*)$/m,
  '(async () => {\n$1\n})();',
);
const TABLES = ['20', '22'].flatMap((v) => [`veil_pkg_${process.pid}_${v}_esm`, `veil_pkg_${process.pid}_${v}_cjs`]);

async function runApp(
  node: string,
  file: string,
): Promise<{ changed: boolean; roundTrip: boolean; refused: { typed: boolean; code: string; leaks: boolean } }> {
  const { stdout } = await exec(node, [file], { cwd: app, env, timeout: 60_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

beforeAll(async () => {
  packs = await mkdtemp(join(tmpdir(), 'veil-packs-'));
  // prepack builds dist/ from src/client
  await exec('npm', ['pack', '-w', '@veil/client', '-w', '@veil/sequelize', '-w', '@veil/prisma', '--pack-destination', packs, '--silent'], {
    cwd: ROOT,
    timeout: 180_000,
  });
  tarball = join(packs, 'veil-client-0.1.0.tgz');
  app = await mkdtemp(join(tmpdir(), 'veil-app-'));
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'an-application', private: true }));
  await exec('npm', ['install', '--no-audit', '--no-fund', '--silent', tarball], { cwd: app, timeout: 180_000 });
  await writeFile(join(app, 'esm.mjs'), ESM);
  await writeFile(join(app, 'cjs.cjs'), CJS);
  await writeFile(join(app, 'typed.mts'), TYPED);
  await writeFile(join(app, 'typed.cts'), TYPED);

  ormApp = await mkdtemp(join(tmpdir(), 'veil-orm-app-'));
  await writeFile(join(ormApp, 'package.json'), JSON.stringify({ name: 'an-orm-application', private: true }));
  // @veil/sequelize depends on @veil/client: both tarballs in one install (neither is published)
  await exec('npm', ['install', '--no-audit', '--no-fund', '--silent', tarball, join(packs, 'veil-sequelize-0.1.0.tgz'), 'sequelize@6', 'pg@8'], {
    cwd: ormApp,
    timeout: 300_000,
  });
  await writeFile(join(ormApp, 'orm.mjs'), ORM);
  await writeFile(join(ormApp, 'orm.cjs'), ORM_CJS);

  prismaApp = await mkdtemp(join(tmpdir(), 'veil-prisma-app-'));
  await writeFile(join(prismaApp, 'package.json'), JSON.stringify({ name: 'a-prisma-application', private: true }));
  await exec(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--silent',
      tarball,
      join(packs, 'veil-prisma-0.1.0.tgz'),
      'prisma@7',
      '@prisma/client@7',
      '@prisma/adapter-pg@7',
      'pg@8',
    ],
    { cwd: prismaApp, timeout: 300_000 },
  );
  await writeFile(join(prismaApp, 'schema.prisma'), PRISMA_SCHEMA);
  await writeFile(join(prismaApp, 'prisma.config.mjs'), "export default { schema: 'schema.prisma' };\n");
  // `prisma generate` needs no schema engine, but the CLI fetches one first from
  // binaries.prisma.sh, which this machine cannot reach: pointing it at a stand-in skips that
  await exec(process.execPath, [join(prismaApp, 'node_modules/prisma/build/index.js'), 'generate', '--config', 'prisma.config.mjs'], {
    cwd: prismaApp,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME!, PRISMA_SCHEMA_ENGINE_BINARY: '/bin/true', CHECKPOINT_DISABLE: '1' },
    timeout: 180_000,
  });
  await psql(`CREATE TABLE ${PRISMA_TABLE} (id serial PRIMARY KEY, email text NOT NULL, name text NOT NULL);`);
  await writeFile(join(prismaApp, 'orm.mjs'), PRISMA);
  await writeFile(join(prismaApp, 'orm.cjs'), PRISMA_CJS);

  dataDir = await mkdtemp(join(tmpdir(), 'veil-client-package-'));
  const port = await freePorts(1);
  veil = spawn(join(ROOT, 'bin/veil'), ['serve', '--port', String(port), '--data-dir', dataDir], {
    env: { ...process.env, VEIL_LOG_LEVEL: 'warn', VEIL_WORKERS: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  veil.stderr!.resume();
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  env = { PATH: process.env.PATH!, VEIL_URL: url, VEIL_SECRET: (await readFile(join(dataDir, 'dev-client.secret'), 'utf8')).trim() };
}, 300_000);

afterAll(async () => {
  if (veil && veil.exitCode === null) veil.kill('SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
  await rm(app, { recursive: true, force: true });
  await rm(ormApp, { recursive: true, force: true });
  await rm(prismaApp, { recursive: true, force: true });
  await rm(packs, { recursive: true, force: true });
  await psql([...TABLES, PRISMA_TABLE].map((t) => `DROP TABLE IF EXISTS ${t};`).join('\n')).catch(() => undefined);
});

describe('@veil/client, packed and installed into an empty application', () => {
  it('installs alone: no runtime dependency, compiled JavaScript and declarations only', async () => {
    const installed = (await readdir(join(app, 'node_modules'))).filter((d) => !d.startsWith('.'));
    expect(installed).toEqual(['@veil']);
    expect(await readdir(join(app, 'node_modules/@veil'))).toEqual(['client']);
    const pkg = JSON.parse(await readFile(join(app, 'node_modules/@veil/client/package.json'), 'utf8'));
    expect(pkg.dependencies ?? {}).toEqual({});
    const { stdout } = await exec('tar', ['tzf', tarball]);
    const files = stdout.trim().split('\n');
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    expect(files).toContain('package/dist/esm/index.js');
    expect(files).toContain('package/dist/cjs/index.js');
    expect((await stat(tarball)).size).toBeLessThan(100_000);
  });

  it('its ESM half needs nothing of Node (browsers and bundlers with fetch): no node: imports, no require, no process', async () => {
    const dir = join(app, 'node_modules/@veil/client/dist/esm');
    for (const f of (await readdir(dir)).filter((n) => n.endsWith('.js'))) {
      const text = await readFile(join(dir, f), 'utf8');
      expect(text, f).not.toMatch(/from ['"]node:|require\(|\bprocess\.|\bBuffer\b/);
    }
  });

  for (const version of ['20', '22'] as const) {
    for (const [kind, file] of [
      ['ESM (import)', 'esm.mjs'],
      ['CommonJS (require)', 'cjs.cjs'],
    ] as const) {
      it(`Node ${version}, ${kind}: protects and unprotects through veil serve; a refused token is a typed error without the value`, async () => {
        const node = version === '22' ? process.execPath : await node20();
        const { stdout } = await exec(node, ['--version']);
        expect(stdout.trim()).toMatch(new RegExp(`^v${version}\\.`));
        const out = await runApp(node, file);
        expect(out).toEqual({ changed: true, roundTrip: true, refused: { typed: true, code: 'TOKEN_REFUSED', leaks: false } });
      }, 120_000);
    }
  }

  it('TypeScript resolves its declarations from ESM and CommonJS modules (module NodeNext)', async () => {
    await writeFile(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', lib: ['ES2022', 'DOM'], types: [], strict: true, noEmit: true },
        files: ['typed.mts', 'typed.cts'],
      }),
    );
    const tsc = createRequire(join(ROOT, 'package.json')).resolve('typescript/bin/tsc');
    await expect(exec(process.execPath, [tsc, '-p', app], { timeout: 120_000 })).resolves.toBeDefined();
    // and a misuse is caught through those declarations
    await writeFile(join(app, 'typed.mts'), `${TYPED}\nnew VeilClient({ url: 1 });\n`);
    await expect(exec(process.execPath, [tsc, '-p', app], { timeout: 120_000 })).rejects.toMatchObject({
      stdout: expect.stringMatching(/typed\.mts.*error TS2/),
    });
  }, 240_000);
});

describe('@veil/sequelize, packed and installed with @veil/client, Sequelize and pg', () => {
  for (const version of ['20', '22'] as const) {
    for (const [kind, file] of [
      ['ESM', 'orm.mjs'],
      ['CommonJS', 'orm.cjs'],
    ] as const) {
      it(`Node ${version}, ${kind}: the table holds protected values, the model reads cleartext, a refusal is @veil/client's error class`, async () => {
        const node = version === '22' ? process.execPath : await node20();
        const table = `veil_pkg_${process.pid}_${version}_${file.endsWith('.mjs') ? 'esm' : 'cjs'}`;
        const { stdout } = await exec(node, [file], { cwd: ormApp, env: { ...env, TABLE: table, DB_URL: databaseUrl('postgres') }, timeout: 60_000 });
        const out = JSON.parse(stdout.trim().split('\n').at(-1)!);
        expect(out.read).toEqual({ email: 'alice@example.com', name: 'Alice Example' });
        expect(out.stored.email).not.toContain('@');
        expect(out.stored.name).not.toContain('Alice');
        // one VeilClientError class, shared: @veil/sequelize imports @veil/client, not a copy of it
        expect(out.refused).toEqual({ typed: true, code: 'FIELD_NOT_STRING' });
        // and psql, a second client, sees the same protected row
        const seen = await psql(`SELECT email FROM ${table}`);
        expect(seen.stdout.trim()).toBe(out.stored.email);
      }, 120_000);
    }
  }
});

describe('@veil/prisma, packed and installed with @veil/client and Prisma Client 7 (pg driver adapter)', () => {
  for (const version of ['20', '22'] as const) {
    for (const [kind, file] of [
      ['ESM', 'orm.mjs'],
      ['CommonJS', 'orm.cjs'],
    ] as const) {
      it(`Node ${version}, ${kind}: the table holds protected values, queries return cleartext, a non-string write is refused before the query`, async () => {
        const node = version === '22' ? process.execPath : await node20();
        const { stdout } = await exec(node, [file], { cwd: prismaApp, env: { ...env, DB_URL: databaseUrl('postgres') }, timeout: 60_000 });
        const out = JSON.parse(stdout.trim().split('\n').at(-1)!);
        expect(out.created).toEqual({ email: 'alice@example.com', name: 'Alice Example' });
        expect(out.read).toEqual({ email: 'alice@example.com', name: 'Alice Example' });
        expect(out.stored.email).not.toContain('@');
        expect(out.stored.name).not.toContain('Alice');
        expect(out.refused).toEqual({ typed: true, code: 'FIELD_NOT_STRING' });
        const seen = await psql(`SELECT email FROM ${PRISMA_TABLE} WHERE id = ${out.id}`);
        expect(seen.stdout.trim()).toBe(out.stored.email);
      }, 120_000);
    }
  }
});
