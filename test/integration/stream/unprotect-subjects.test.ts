import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../helpers/memory-audit-sink.ts';
import type { UnprotectReply } from '../../../src/stream/unprotect/index.ts';
import { createTopics, kafkaClient, topicsFor } from '../../helpers/kafka.ts';
import { startTestService, type TestService } from '../../helpers/http-service.ts';
import { startUnprotectResponders, type UnprotectResponders } from '../../helpers/unprotect-responders.ts';
import { deskResponderYaml } from '../../http/support.ts';
import { personConfig, subjectCall } from '../../helpers/subject-config.ts';

/**
 * Unprotect on demand over Kafka with keys scoped to the data subject (issue 29), on a real broker:
 * a request names its subject with a Subject evidence as on POST /transform; once the subject is
 * erased (on the HTTP service sharing the data dir) the reply answers SUBJECT_ERASED per value,
 * audited, never the value and never the subject id.
 */
const CONFIG = personConfig();

const call = (action: string, subject: string | undefined, value: string) => subjectCall(action, [{ subject, values: [['email', value]] }], 'support');

describe('unprotect on demand over Kafka for data subjects (real broker)', () => {
  const t = topicsFor('unprotect-subjects');
  const [requests, replies] = [`${t.raw}.requests`, `${t.raw}.replies`];
  const audit = new MemoryAuditSink();
  let http: TestService;
  let bed: UnprotectResponders;
  let token: string;

  beforeAll(async () => {
    await createTopics(kafkaClient(), [requests, replies, t.dlq], 1);
    http = await startTestService({ configText: `${CONFIG}\n${await deskResponderYaml({ requests, replies, dlq: t.dlq, groupId: `veil-test-${t.id}` })}` });
    token = await http.token('desk-agent', 'desk-agent-secret-0123456789');
    bed = await startUnprotectResponders({ dataDir: http.dataDir, requests, replies, audit, client: 'kafkajs', clientId: 'unprotect-subjects-test' });
  }, 120_000);
  afterAll(async () => {
    await bed?.close();
    await http?.close();
  });

  const valueOf = (r: UnprotectReply) => (r.body as { responses: { instances: { value: string }[] }[] }).responses[0]!.instances[0]!.value;
  const errorOf = (r: UnprotectReply) => (r.body as { error: { code: string; errors?: { code: string }[] } }).error;

  it("answers the subject's value; after the subject is erased, SUBJECT_ERASED per value; without a Subject, SUBJECT_REQUIRED", async () => {
    const protect = await fetch(`${http.url}/transform`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(call('Protect', 'cust-kafka-1', 'kafka.person@example.com')),
    });
    const protectedEmail = ((await protect.json()) as { responses: { instances: { value: string }[] }[] }).responses[0]!.instances[0]!.value;
    expect(valueOf(await bed.client.request(call('Unprotect', 'cust-kafka-1', protectedEmail), { token }))).toBe('kafka.person@example.com');
    expect(errorOf(await bed.client.request(call('Unprotect', undefined, protectedEmail), { token })).code).toBe('SUBJECT_REQUIRED');
    await http.service.subjects.erase('cust-kafka-1', { by: 'test', reason: 'Art. 17 request' });
    const erased = await bed.client.request(call('Unprotect', 'cust-kafka-1', protectedEmail), { token });
    expect(errorOf(erased)).toMatchObject({
      code: 'SUBJECT_ERASED',
      status: 422,
      pointer: '/requests/0/instances/0/value',
      errors: [{ code: 'SUBJECT_ERASED', pointer: '/requests/0/instances/0/value' }],
    });
    expect(JSON.stringify(erased.body)).not.toContain('kafka.person');
    expect(JSON.stringify(erased.body)).not.toContain('cust-kafka-1');
    expect(audit.events.some((e) => e.outcome === 'failed' && e.code === 'SUBJECT_ERASED')).toBe(true);
    expect(JSON.stringify(audit.events)).not.toContain('cust-kafka-1');
  }, 60_000);
});
