import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { freePorts } from '../../helpers/processes.ts';

const root = new URL('../../..', import.meta.url).pathname;

async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('veil serve did not become ready');
}

/** `veil serve` as the README runs it: a real process on its embedded defaults. */
describe('veil serve (process)', () => {
  let dataDir: string;
  let child: ChildProcess;
  let url: string;
  let stderr = '';

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'veil-serve-'));
    const port = await freePorts(1);
    url = `http://127.0.0.1:${port}`;
    child = spawn(join(root, 'bin/veil'), ['serve', '--port', String(port), '--data-dir', dataDir], {
      env: { ...process.env, VEIL_LOG_LEVEL: 'warn', VEIL_DRAIN_DELAY_MS: '1500' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stderr!.on('data', (d) => (stderr += String(d)));
    await waitReady(url);
  }, 60_000);
  afterAll(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  it('prints where the development client secret is, never the secret itself', () => {
    expect(stderr).toContain(join(dataDir, 'dev-client.secret'));
    expect(stderr).toContain('development master key');
  });

  /** the round trip's output: the protected value, and the unprotect's response, which must give the cleartext back */
  function expectRoundTrip(stdout: string): void {
    const protectedLine = /protected:\s+(\S+)/.exec(stdout)![1]!;
    expect(protectedLine).toMatch(/^[A-Za-z0-9_-]{30,}$/);
    expect(protectedLine).not.toContain('alice');
    const response = JSON.parse(stdout.split('\n').find((l) => l.startsWith('{'))!);
    expect(response.responses[0].instances[0]).toEqual({ className: 'Customer', propertyName: 'email', value: 'alice@example.com' });
  }

  it('runs the README round trip (docs/examples/http-round-trip.sh) from another directory: token, protect, unprotect', async () => {
    // not the repository's root, and the port as `npm start` reads it (VEIL_PORT)
    const { stdout } = await promisify(execFile)('sh', [join(root, 'docs/examples/http-round-trip.sh')], {
      cwd: tmpdir(),
      env: { ...process.env, VEIL_URL: '', VEIL_PORT: new URL(url).port, VEIL_DATA_DIR: dataDir },
    });
    expectRoundTrip(stdout);
  });

  it('the round trip finds the secret in the .veil of its own repository by default, wherever it runs from', async () => {
    // a repository laid out as this one (docs/examples/ and .veil/ side by side), holding this service's secret
    const repo = await mkdtemp(join(tmpdir(), 'veil-repo-'));
    try {
      await mkdir(join(repo, 'docs/examples'), { recursive: true });
      await mkdir(join(repo, '.veil'));
      await copyFile(join(dataDir, 'dev-client.secret'), join(repo, '.veil/dev-client.secret'));
      await symlink(join(root, 'docs/examples/http-round-trip.sh'), join(repo, 'docs/examples/http-round-trip.sh'));
      const env: NodeJS.ProcessEnv = { ...process.env, VEIL_URL: url };
      delete env.VEIL_DATA_DIR;
      const { stdout } = await promisify(execFile)('sh', [join(repo, 'docs/examples/http-round-trip.sh')], { cwd: '/', env });
      expectRoundTrip(stdout);
    } finally {
      await rm(repo, { recursive: true, force: true });
    }
  });

  it('drains on SIGTERM: an in-flight call completes, then the process exits 0', async () => {
    const { readFile } = await import('node:fs/promises');
    const secret = (await readFile(join(dataDir, 'dev-client.secret'), 'utf8')).trim();
    const tokenRes = await fetch(`${url}/connect/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: secret }),
    });
    const { access_token } = (await tokenRes.json()) as { access_token: string };
    const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    const big = {
      rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: 'fraud' }] }],
      processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: 'Protect' }] }],
      requests: [
        {
          guid: guid(3),
          rightsContext: guid(1),
          processingContext: guid(2),
          instances: Array.from({ length: 10_000 }, (_, i) => ({ className: 'Customer', propertyName: 'name', value: `person ${i}` })),
        },
      ],
    };
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const inFlight = fetch(`${url}/transform`, {
      method: 'POST',
      headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify(big),
    });
    await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGTERM');
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { responses: { instances: unknown[] }[] }).responses[0]!.instances).toHaveLength(10_000);
    // within the drain delay the service still answers, but no longer reports ready
    let ready = 200;
    for (let i = 0; i < 20 && ready === 200; i++) {
      ready = (await fetch(`${url}/readyz`)).status;
      if (ready === 200) await new Promise((r) => setTimeout(r, 25));
    }
    expect(ready).toBe(503);
    expect(await exited).toBe(0);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  }, 60_000);
});

// The README shows the commands of docs/examples/http-round-trip.sh: test/docs/doc-examples.test.ts.
