import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess, securityFixture, type SecurityFixture } from '../../helpers/gateway-security.ts';
import { sigtermAndWait, waitFor } from '../../helpers/processes.ts';
import { customers, EMAIL, gatewaySection } from '../../helpers/gateway-routes.ts';

const ROUTES = gatewaySection([customers(EMAIL)], 'unmatched: forward');

/**
 * An orchestrator's rolling restart of `veil gateway`: SIGTERM while clients keep posting records
 * through it. The gateway drains (health turns 503, exchanges in flight finish) and exits with
 * code 0 well within its drain grace.
 */
describe('veil gateway stops when asked', () => {
  let f: SecurityFixture;
  beforeAll(async () => {
    f = await securityFixture(ROUTES);
  }, 60_000);
  afterAll(async () => f?.close());

  it('exits within seconds of SIGTERM under load, code 0', async () => {
    const g = await startGatewayProcess(f.configFile, f.dataDir, { VEIL_DRAIN_GRACE_MS: '10000' });
    let ok = 0;
    let running = true;
    const clients = Array.from({ length: 8 }, async (_, c) => {
      for (let i = 0; running; i++) {
        const r = await fetch(`${g.url}/customers`, {
          method: 'POST',
          headers: { authorization: `Bearer ${f.tokens.ingest}`, 'content-type': 'application/json' },
          body: JSON.stringify({ email: `user${c}-${i}@example.com`, note: 'x'.repeat(200) }),
        }).catch(() => undefined);
        if (!r) break;
        if (r.status < 300) ok++;
        await r.arrayBuffer().catch(() => undefined);
      }
    });
    await waitFor(() => ok >= 50, 30_000, 'calls through the gateway');
    const { code, tookMs: took } = await sigtermAndWait(g.child, 15_000);
    running = false;
    await Promise.all(clients);
    if (g.child.exitCode === null) g.child.kill('SIGKILL');
    expect(code, g.output().split('\n').slice(-10).join('\n')).toBe(0);
    expect(took).toBeLessThan(12_000);
  }, 90_000);
});
