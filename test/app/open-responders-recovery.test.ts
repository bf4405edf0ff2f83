import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openResponders, type Responders } from '../../src/app/open-responders.ts';
import { ROOT, waitFor } from '../helpers/processes.ts';
import { FakeKafka } from '../stream/fake-kafka.ts';

/**
 * Issue 40: a responder's consumer that stops for good — kafkajs gave up on finding the group
 * coordinator while the brokers were away, in one of nine outage runs — is re-created in the
 * process: /readyz is red while it is down, /healthz stays green (a restart loop would fix
 * nothing during the outage), and it is ready again once the new consumer joins.
 */
describe('stream unprotect: a consumer down for good is re-created, not restarted by liveness', () => {
  let responders: Responders | undefined;
  let dataDir = '';
  afterAll(async () => {
    await responders?.stop().catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
  });

  it('readiness red while down, liveness green throughout; a new consumer joins and it is ready again', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'veil-responder-recovery-'));
    const kafka = new FakeKafka();
    responders = await openResponders({
      configFile: join(ROOT, 'config/example-pipeline.yaml'),
      dataDir,
      env: { VEIL_MASTER_KEY: 'a'.repeat(64), VEIL_LOG_LEVEL: 'silent' },
      now: () => new Date(),
      development: true,
      kafka,
      names: ['support-desk'],
    });
    const server = await responders.listen(0, '127.0.0.1');
    const status = (path: string) => fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`).then((r) => r.status);
    await responders.start();
    kafka.events.assigned!({ 'unprotect.requests': [0] });
    expect([await status('/healthz'), await status('/readyz')]).toEqual([200, 200]);
    expect(kafka.consumersCreated).toBe(1);

    kafka.events.crashed!(Object.assign(new Error('Failed to find group coordinator'), { name: 'KafkaError' }), false);
    await waitFor(() => kafka.consumersCreated === 2, 10_000, 'the consumer re-created');
    expect(await status('/healthz')).toBe(200);
    // not ready until the new consumer answers: it has not joined yet
    expect(await status('/readyz')).toBe(503);
    kafka.events.assigned!({ 'unprotect.requests': [0] });
    expect([await status('/healthz'), await status('/readyz')]).toEqual([200, 200]);
  }, 60_000);
});
