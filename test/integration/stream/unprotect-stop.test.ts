import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openKafkaPort, plainConnection, streamClient } from '../../../src/kafka/index.ts';
import { UnprotectClient } from '../../../src/stream/unprotect/index.ts';
import { BROKERS, createTopics, kafkaClient, topicsFor } from '../../helpers/kafka.ts';
import { MASTER_KEY_HEX, startTestService } from '../../helpers/http-service.ts';
import { freePorts, ROOT, sigtermAndWait, waitFor } from '../../helpers/processes.ts';
import { streamClients } from '../../helpers/stream-clients.ts';
import { body, deskResponderYaml, exampleWith, transform } from '../../http/support.ts';

/**
 * An orchestrator's rolling restart of `veil stream unprotect`: SIGTERM while requesters keep
 * asking. The responder finishes or abandons what it holds, leaves its group and exits 0 well
 * within its stop timeout.
 */
describe.each(streamClients())('veil stream unprotect on %s stops when asked', (clientName) => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('exits 0 within seconds of SIGTERM under load', async () => {
    const t = topicsFor(`unprotect-stop-${clientName}`);
    const requests = `${t.raw}.requests`;
    const replies = `${t.raw}.replies`;
    await createTopics(kafkaClient(), [requests, replies, t.dlq], 2);
    const dataDir = await mkdtemp(join(tmpdir(), 'veil-unprotect-stop-'));
    dirs.push(dataDir);
    const extra = await deskResponderYaml({ requests, replies, dlq: t.dlq, groupId: `veil-test-${t.id}` });
    const http = await startTestService({ configText: exampleWith(extra), dataDir });
    const port = await openKafkaPort(streamClient(clientName), { connection: plainConnection(BROKERS), clientId: 'unprotect-stop-test' });
    const clients: UnprotectClient[] = [];
    // a port of its own for /healthz and /metrics (the default, 9465, may be taken)
    const opsPort = await freePorts(1);
    const child = spawn(
      join(ROOT, 'bin/veil'),
      ['stream', 'unprotect', '--config', join(dataDir, 'config.yaml'), '--data-dir', dataDir, '--port', String(opsPort)],
      {
        env: {
          ...process.env,
          VEIL_MASTER_KEY: MASTER_KEY_HEX,
          VEIL_BASE_URL: 'http://veil.test',
          VEIL_LOG_LEVEL: 'warn',
          KAFKA_BROKERS: BROKERS.join(','),
          VEIL_STREAM_CLIENT: clientName,
          VEIL_STOP_TIMEOUT_MS: '20000',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout!.on('data', (d) => (out += String(d)));
    child.stderr!.on('data', (d) => (out += String(d)));
    let running = true;
    try {
      const supportToken = await http.token('desk-agent', 'desk-agent-secret-0123456789');
      const res = await transform(http, await http.token(), body({ roles: ['fraud'], action: 'Protect', instances: [['email', 'stop.person@example.com']] }));
      const protectedEmail = (res.json as { responses: { instances: { value: string }[] }[] }).responses[0]!.instances[0]!.value;
      const ask = body({ roles: ['support'], action: 'Unprotect', instances: [['email', protectedEmail]] });
      for (let i = 0; i < 4; i++) clients.push(await UnprotectClient.connect({ kafka: port, requestTopic: requests, replyTopic: replies }));
      let answered = 0;
      const load = clients.map(async (c) => {
        while (running) {
          const reply = await c.request(ask, { token: supportToken, timeoutMs: 5000 }).catch(() => undefined);
          if (reply?.status === 200) answered++;
        }
      });
      await waitFor(() => answered >= 40, 60_000, `replies from the responder (${out})`);
      const { code, tookMs: took } = await sigtermAndWait(child, 25_000);
      running = false;
      await Promise.all(load);
      expect({ code, late: out.includes('did not stop within') }, out.split('\n').slice(-8).join('\n')).toEqual({ code: 0, late: false });
      expect(took).toBeLessThan(15_000);
    } finally {
      running = false;
      if (child.exitCode === null) child.kill('SIGKILL');
      for (const c of clients) await c.close().catch(() => undefined);
      await port.disconnect();
      await http.close();
    }
  }, 180_000);
});
