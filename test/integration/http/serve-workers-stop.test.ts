import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePorts, ROOT, sigtermAndWait, waitFor } from '../../helpers/processes.ts';

const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const body = JSON.stringify({
  rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: 'support' }] }],
  processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: 'Protect' }] }],
  requests: [
    {
      guid: guid(3),
      rightsContext: guid(1),
      processingContext: guid(2),
      instances: Array.from({ length: 200 }, (_, i) => ({ className: 'Customer', propertyName: 'email', value: `user${i}@example.com` })),
    },
  ],
});

/**
 * An orchestrator's rolling restart: SIGTERM to `veil serve --workers 2` while clients keep
 * calling. The primary and both workers drain and exit, with code 0, long before the stop timeout.
 */
describe('veil serve --workers 2 stops when asked', () => {
  it('exits within seconds of SIGTERM under load: primary and both workers, exit code 0', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'veil-stop-'));
    const port = await freePorts(1);
    const url = `http://127.0.0.1:${port}`;
    const child = spawn(join(ROOT, 'bin/veil'), ['serve', '--workers', '2', '--port', String(port), '--data-dir', dataDir], {
      env: { ...process.env, VEIL_LOG_LEVEL: 'warn', VEIL_STOP_TIMEOUT_MS: '20000' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += String(d)));
    try {
      await waitFor(
        () =>
          fetch(`${url}/readyz`).then(
            (r) => r.ok,
            () => false,
          ),
        30_000,
        'service ready',
      );
      const secret = (await readFile(join(dataDir, 'dev-client.secret'), 'utf8')).trim();
      const tokenRes = await fetch(`${url}/connect/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: secret }),
      });
      const { access_token: token } = (await tokenRes.json()) as { access_token: string };
      // 8 clients calling back to back until the service goes away
      let ok = 0;
      let running = true;
      const clients = Array.from({ length: 8 }, async () => {
        while (running) {
          const r = await fetch(`${url}/transform`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body,
          }).catch(() => undefined);
          if (!r) break;
          if (r.status === 200) ok++;
          await r.arrayBuffer();
        }
      });
      await waitFor(() => ok >= 50, 30_000, 'calls served under load');
      const { code, tookMs: took } = await sigtermAndWait(child, 15_000);
      running = false;
      await Promise.all(clients);
      expect({ code, stderr: stderr.includes('did not drain') }).toEqual({ code: 0, stderr: false });
      expect(took).toBeLessThan(10_000);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
