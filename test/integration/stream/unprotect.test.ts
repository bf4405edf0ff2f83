import { join } from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../helpers/memory-audit-sink.ts';
import { streamClients } from '../../helpers/stream-clients.ts';
import { UnprotectClient, type UnprotectReply } from '../../../src/stream/unprotect/index.ts';
import { BROKERS, consume, createTopics, kafkaClient, produce, topicsFor } from '../../helpers/kafka.ts';
import { startTestService, type TestService } from '../../helpers/http-service.ts';
import { startUnprotectResponders, type UnprotectResponders } from '../../helpers/unprotect-responders.ts';
import { deskResponderYaml, exampleWith, transform } from '../../http/support.ts';
import { transformRequest } from '../../helpers/engine-fixture.ts';
import { freePorts } from '../../helpers/processes.ts';

describe.each(streamClients())('unprotect on demand over Kafka on %s (real broker)', (clientName) => {
  const t = topicsFor('unprotect');
  const requests = `${t.raw}.requests`;
  const replies = `${t.raw}.replies`;
  const other = `${t.raw}.other`;
  const kafka = kafkaClient();
  const clock = { now: new Date() };
  const audit = new MemoryAuditSink();
  let dataDir: string;
  let http: TestService;
  let bed: UnprotectResponders;
  let supportToken: string;
  let protectedEmail: string;
  let protectedCard: string;

  const unprotect = (property: string, value: string, role = 'support') => transformRequest(role, 'Unprotect', [property, value]);
  /** `instances` protected by fraud over POST /transform: their protected values, in order */
  const protect = async (...instances: [string, string][]) => {
    const res = await transform(http, await http.token(), transformRequest('fraud', 'Protect', ...instances));
    return (res.json as { responses: { instances: { value: string }[] }[] }).responses[0]!.instances.map((i) => i.value);
  };
  const valueOf = (r: UnprotectReply) => (r.body as { responses: { instances: { value: string }[] }[] }).responses[0]!.instances[0]!.value;
  const codeOf = (r: UnprotectReply) => (r.body as { error: { code: string } }).error.code;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'veil-unprotect-'));
    await createTopics(kafka, [requests, replies, other, t.dlq], 2);
    const extra = await deskResponderYaml({ requests, replies, dlq: t.dlq, groupId: `veil-test-${t.id}` });
    http = await startTestService({ configText: exampleWith(extra), dataDir });
    supportToken = await http.token('desk-agent', 'desk-agent-secret-0123456789');
    [protectedEmail, protectedCard] = (await protect(['email', 'kafka.person@example.com'], ['cardNumber', '4111-1111-1111-1111'])) as [string, string];
    bed = await startUnprotectResponders({
      dataDir,
      requests,
      replies,
      audit,
      client: clientName,
      clientId: 'unprotect-test',
      respondersClient: clientName,
      now: () => clock.now,
    });
  }, 120_000);
  afterAll(async () => {
    await bed?.close();
    await http?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('serves /healthz (with the running version), /readyz and /metrics on its ops port, for probes and a ServiceMonitor', async () => {
    const opsPort = await freePorts(1);
    const server = await bed.responders.listen(opsPort, '127.0.0.1');
    try {
      const get = async (path: string) => {
        const res = await fetch(`http://127.0.0.1:${opsPort}${path}`);
        return { status: res.status, text: await res.text() };
      };
      const health = await get('/healthz');
      expect(health.status).toBe(200);
      expect(JSON.parse(health.text)).toMatchObject({ status: 'ok', configuration: { version: 1 } });
      expect(await get('/readyz')).toEqual({ status: 200, text: '{"status":"ready"}' });
      expect((await get('/metrics')).text).toMatch(/^process_cpu_seconds_total /m);
    } finally {
      server.close();
    }
  });

  it('answers an authorized unprotect with the transform response, and audits it without values', async () => {
    const reply = await bed.client.request(unprotect('email', protectedEmail), { token: supportToken });
    expect(reply.status).toBe(200);
    expect(valueOf(reply)).toBe('kafka.person@example.com');
    const event = audit.events.find((e) => e.channel === 'kafka' && e.outcome === 'ok')!;
    expect(event).toMatchObject({ client: 'desk-agent', fields: [{ className: 'Customer', propertyName: 'email', action: 'Unprotect', count: 1 }] });
    expect(JSON.stringify(audit.events)).not.toContain('kafka.person@example.com');
  });

  it('refuses what the role may not do, and a role the token does not carry, with the HTTP codes', async () => {
    const card = await bed.client.request(unprotect('cardNumber', protectedCard), { token: supportToken });
    expect([card.status, codeOf(card)]).toEqual([403, 'ACTION_NOT_GRANTED']);
    expect(JSON.stringify(card.body)).not.toContain('4111-1111-1111-1111');
    const claimed = await bed.client.request(unprotect('cardNumber', protectedCard, 'fraud'), { token: supportToken });
    expect([claimed.status, codeOf(claimed)]).toEqual([403, 'ROLE_NOT_HELD']);
  });

  it('refuses invalid and expired tokens, malformed bodies and late requests', async () => {
    const invalid = await bed.client.request(unprotect('email', protectedEmail), { token: 'not.a.token' });
    expect([invalid.status, codeOf(invalid)]).toEqual([401, 'TOKEN_INVALID']);
    const bad = await bed.client.request({ nonsense: true } as never, { token: supportToken });
    expect([bad.status, codeOf(bad)]).toEqual([400, 'REQUEST_MALFORMED']);
    const late = await bed.client.request(unprotect('email', protectedEmail), { token: supportToken, deadline: new Date(clock.now.getTime() - 1) });
    expect([late.status, codeOf(late)]).toEqual([504, 'DEADLINE_EXCEEDED']);
    const fresh = await http.token('desk-agent', 'desk-agent-secret-0123456789');
    clock.now = new Date(clock.now.getTime() + 2 * 3600_000);
    try {
      const expired = await bed.client.request(unprotect('email', protectedEmail), { token: fresh });
      expect([expired.status, codeOf(expired)]).toEqual([401, 'TOKEN_EXPIRED']);
    } finally {
      clock.now = new Date(clock.now.getTime() - 2 * 3600_000);
    }
  });

  it('never writes to a reply topic the configuration does not allow: the request is dead-lettered without its body', async () => {
    const correlationId = randomUUID();
    await produce(kafka, requests, [
      {
        key: 'x',
        value: JSON.stringify(unprotect('email', protectedEmail)),
        headers: { authorization: `Bearer ${supportToken}`, 'correlation-id': correlationId, 'reply-to': other },
      },
    ]);
    const dead = (await consume(kafka, t.dlq, 1, 30_000)).filter((d) => d.headers['correlation-id'] === correlationId);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.headers['veil.error.code']).toBe('REPLY_TOPIC_NOT_ALLOWED');
    expect(dead[0]!.value).toBeNull();
    expect(await consume(kafka, other, 1, 3000, 0)).toHaveLength(0);
  }, 60_000);

  it('keeps the replies of many concurrent requesters apart', async () => {
    const clients = await Promise.all(
      Array.from({ length: 4 }, () => UnprotectClient.connect({ kafka: bed.port, requestTopic: requests, replyTopic: replies })),
    );
    const values = Array.from({ length: 64 }, (_, i) => `concurrent.${i}@example.com`);
    const protectedValues = await protect(...values.map((v) => ['email', v] as [string, string]));
    const answers = await Promise.all(protectedValues.map((p, i) => clients[i % 4]!.request(unprotect('email', p), { token: supportToken })));
    expect(answers.map(valueOf)).toEqual(values);
    await Promise.all(clients.map((c) => c.close()));
  }, 60_000);

  it('veil stream request (the round trip of docs/stream.md) sends a request and prints the reply', async () => {
    const { writeFile } = await import('node:fs/promises');
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    await writeFile(join(dataDir, 'token.txt'), supportToken);
    await writeFile(join(dataDir, 'unprotect.json'), JSON.stringify(unprotect('email', protectedEmail)));
    const { stdout } = await promisify(execFile)(
      new URL('../../../bin/veil', import.meta.url).pathname,
      [
        'stream',
        'request',
        '--request-topic',
        requests,
        '--reply-topic',
        replies,
        '--token-file',
        join(dataDir, 'token.txt'),
        '--request',
        join(dataDir, 'unprotect.json'),
      ],
      { env: { ...process.env, KAFKA_BROKERS: BROKERS.join(','), VEIL_STREAM_CLIENT: clientName } },
    );
    expect(JSON.parse(stdout).responses[0].instances[0].value).toBe('kafka.person@example.com');
  }, 60_000);

  it('loses no request when the responder restarts mid-load', async () => {
    const values = Array.from({ length: 40 }, (_, i) => `restart.${i}@example.com`);
    const protectedValues = await protect(...values.map((v) => ['email', v] as [string, string]));
    const pending = protectedValues.map((p, i) =>
      new Promise((r) => setTimeout(r, i * 20)).then(() => bed.client.request(unprotect('email', p), { token: supportToken, timeoutMs: 60_000 })),
    );
    await new Promise((r) => setTimeout(r, 300));
    await bed.restart();
    const answers = await Promise.all(pending);
    expect(answers.map(valueOf)).toEqual(values);
  }, 120_000);
});
