import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePorts, ROOT, waitFor } from '../../helpers/processes.ts';

// CI failed on this (stop 35): two processes adopting the configuration file at one moment both
// wrote config-versions/0001.yaml and the loser exited (EEXIST); gateways threw KEY_EXISTS
// creating the token signing key; a development client's secret could be read half-written
describe('processes starting together on one fresh data dir (real processes)', () => {
  let dataDir: string | undefined;
  const children: ChildProcess[] = [];
  afterEach(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('two gateways and two services all start, on one adopted version, one signing key and one development secret', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'veil-together-'));
    const configFile = join(dataDir, 'config.yaml');
    await writeFile(
      configFile,
      `${await readFile(join(ROOT, 'config/example.yaml'), 'utf8')}\ngateway:\n  upstream: http://127.0.0.1:9\n  routes:\n    - { name: plain, method: POST, path: /plain }\n`,
    );
    const first = await freePorts(4);
    const ports = [first, first + 1, first + 2, first + 3];
    const outputs: string[] = [];
    const start = (command: string, port: number) => {
      const child = spawn(join(ROOT, 'bin/veil'), [command, '--config', configFile, '--data-dir', dataDir!, '--port', String(port)], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const i = outputs.push('') - 1;
      child.stdout!.on('data', (d) => (outputs[i] += String(d)));
      child.stderr!.on('data', (d) => (outputs[i] += String(d)));
      children.push(child);
    };
    start('gateway', ports[0]!);
    start('serve', ports[1]!);
    start('gateway', ports[2]!);
    start('serve', ports[3]!);
    const up = async (url: string) => (await fetch(url).catch(() => undefined))?.status === 200;
    await waitFor(
      async () => {
        if (children.some((c) => c.exitCode !== null)) throw new Error(`a process exited:\n${outputs.join('\n---\n').slice(-3000)}`);
        return (
          (await up(`http://127.0.0.1:${ports[0]}/_veil/healthz`)) &&
          (await up(`http://127.0.0.1:${ports[1]}/healthz`)) &&
          (await up(`http://127.0.0.1:${ports[2]}/_veil/healthz`)) &&
          (await up(`http://127.0.0.1:${ports[3]}/healthz`))
        );
      },
      60_000,
      'all four processes healthy',
    );
    expect((await readdir(join(dataDir, 'config-versions'))).filter((f) => f.endsWith('.yaml'))).toEqual(['0001.yaml']);
    expect(JSON.parse(await readFile(join(dataDir, 'config-versions', 'index.json'), 'utf8'))).toMatchObject({
      active: 1,
      versions: [{ number: 1, source: 'file' }],
    });
    // both services accept the one development secret on disk
    const secret = (await readFile(join(dataDir, 'dev-client.secret'), 'utf8')).trim();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{32}$/);
    for (const port of [ports[1]!, ports[3]!]) {
      const res = await fetch(`http://127.0.0.1:${port}/connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: secret }),
      });
      expect(res.status).toBe(200);
    }
  }, 90_000);
});
