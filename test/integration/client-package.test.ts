import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { node20 } from '../helpers/node20.ts';
import { freePorts, ROOT } from '../helpers/processes.ts';

/**
 * @veil/client as an application gets it: `npm pack` of the workspace package, installed into an
 * empty application, imported as ESM and required as CommonJS on Node 20 and Node 22, typed by
 * TypeScript in both module kinds, and run against a real `veil serve`.
 */

const exec = promisify(execFile);
let app: string;
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
const CJS = ESM.replace("import { VeilClient, VeilClientError } from '@veil/client';", "const { VeilClient, VeilClientError } = require('@veil/client');")
  .replace(/^(const \[protectedValue\][\s\S]*)$/m, '(async () => {\n$1\n})();');

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

async function runApp(node: string, file: string): Promise<{ changed: boolean; roundTrip: boolean; refused: { typed: boolean; code: string; leaks: boolean } }> {
  const { stdout } = await exec(node, [file], { cwd: app, env, timeout: 60_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

beforeAll(async () => {
  packs = await mkdtemp(join(tmpdir(), 'veil-packs-'));
  // prepack builds dist/ from src/client
  await exec('npm', ['pack', '-w', '@veil/client', '--pack-destination', packs, '--silent'], { cwd: ROOT, timeout: 180_000 });
  tarball = join(packs, (await readdir(packs)).find((f) => f.endsWith('.tgz'))!);
  app = await mkdtemp(join(tmpdir(), 'veil-app-'));
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'an-application', private: true }));
  await exec('npm', ['install', '--no-audit', '--no-fund', '--silent', tarball], { cwd: app, timeout: 180_000 });
  await writeFile(join(app, 'esm.mjs'), ESM);
  await writeFile(join(app, 'cjs.cjs'), CJS);
  await writeFile(join(app, 'typed.mts'), TYPED);
  await writeFile(join(app, 'typed.cts'), TYPED);

  dataDir = await mkdtemp(join(tmpdir(), 'veil-client-package-'));
  const port = await freePorts(1);
  veil = spawn(join(ROOT, 'bin/veil'), ['serve', '--port', String(port), '--data-dir', dataDir], {
    env: { ...process.env, VEIL_LOG_LEVEL: 'warn', VEIL_WORKERS: '1' }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  veil.stderr!.resume();
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  env = { PATH: process.env.PATH!, VEIL_URL: url, VEIL_SECRET: (await readFile(join(dataDir, 'dev-client.secret'), 'utf8')).trim() };
}, 300_000);

afterAll(async () => {
  if (veil && veil.exitCode === null) veil.kill('SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
  await rm(app, { recursive: true, force: true });
  await rm(packs, { recursive: true, force: true });
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
    for (const [kind, file] of [['ESM (import)', 'esm.mjs'], ['CommonJS (require)', 'cjs.cjs']] as const) {
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
    await writeFile(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', lib: ['ES2022', 'DOM'], types: [], strict: true, noEmit: true }, files: ['typed.mts', 'typed.cts'] }));
    const tsc = createRequire(join(ROOT, 'package.json')).resolve('typescript/bin/tsc');
    await expect(exec(process.execPath, [tsc, '-p', app], { timeout: 120_000 })).resolves.toBeDefined();
    // and a misuse is caught through those declarations
    await writeFile(join(app, 'typed.mts'), `${TYPED}\nnew VeilClient({ url: 1 });\n`);
    await expect(exec(process.execPath, [tsc, '-p', app], { timeout: 120_000 })).rejects.toMatchObject({ stdout: expect.stringMatching(/typed\.mts.*error TS2/) });
  }, 240_000);
});
