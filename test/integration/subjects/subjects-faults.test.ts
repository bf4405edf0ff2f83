import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awsKmsEnv, startMoto, type Moto } from '../../helpers/moto.ts';
import { startTestService, type TestService } from '../../helpers/http-service.ts';
import { BROKERS, createTopics, kafkaClient } from '../../helpers/kafka.ts';
import { personConfig, subjectCall } from '../../helpers/subject-config.ts';
import { waitFor } from '../../helpers/processes.ts';

/**
 * Erasure under faults (issue 29): the KMS paused while subjects are erased and protected at once,
 * and two hosts — one erasing, one protecting the same subjects at the same moment. Whatever
 * interleaves, once an erasure returned no protect started after it succeeds for that subject
 * (the configuration keeps erased ids refused), and every value protected for it before answers
 * SUBJECT_ERASED; the other subjects are untouched. (A process killed during an erasure:
 * test/integration/subjects/subjects-kill.test.ts.)
 */
const CONFIG = personConfig({ returning: 'refuse', extra: 'service:\n  rateLimit: { transformPerSecond: 100000, transformBurst: 100000 }\n' });

const body = (action: string, subject: string, value: string) => subjectCall(action, [{ subject, values: [['email', value]] }]);

async function transform(
  svc: TestService,
  token: string,
  action: string,
  subject: string,
  value: string,
): Promise<{ status: number; code?: string; value?: string }> {
  const res = await fetch(`${svc.url}/transform`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body(action, subject, value)),
  });
  const json = (await res.json()) as { code?: string; errors?: { code: string }[]; responses?: { instances: { value: string }[] }[] };
  return { status: res.status, ...(json.responses ? { value: json.responses[0]!.instances[0]!.value } : { code: json.errors?.[0]?.code ?? json.code }) };
}

/**
 * Protects each subject over and over on `svc` until `stop` resolves, recording for every call
 * when it started and what it answered.
 */
function protectLoop(svc: TestService, token: string, subjects: readonly string[], stop: Promise<unknown>) {
  const calls: { subject: string; startedAt: number; status: number; code?: string; value?: string }[] = [];
  let stopped = false;
  void stop.finally(() => (stopped = true));
  const loops = subjects.map(async (subject) => {
    while (!stopped) {
      const startedAt = performance.now();
      const reply = await transform(svc, token, 'Protect', subject, `${subject}@example.org`);
      calls.push({ subject, startedAt, ...reply });
    }
  });
  return { calls, done: Promise.all(loops) };
}

/** Checks the rule: after a subject's erasure returned, no protect started later succeeded; its values answer SUBJECT_ERASED. */
async function expectErased(
  svc: TestService,
  token: string,
  erasedAt: Map<string, number>,
  calls: readonly { subject: string; startedAt: number; status: number; code?: string; value?: string }[],
) {
  let refusedAfter = 0;
  for (const c of calls) {
    const at = erasedAt.get(c.subject);
    if (at === undefined || c.startedAt < at) continue;
    expect(c.status, `${c.subject} protected after its erasure returned`).not.toBe(200);
    expect(['SUBJECT_ERASED', 'KMS_UNAVAILABLE']).toContain(c.code);
    refusedAfter++;
  }
  let valuesErased = 0;
  for (const c of calls) {
    if (c.status !== 200) continue;
    const back = await transform(svc, token, 'Unprotect', c.subject, c.value!);
    if (erasedAt.has(c.subject)) {
      expect(back.code).toBe('SUBJECT_ERASED');
      valuesErased++;
    } else {
      expect(back.value).toBe(`${c.subject}@example.org`);
    }
  }
  return { refusedAfter, valuesErased };
}

describe('erasure under faults', () => {
  let moto: Moto;
  let keyId: string;

  beforeAll(async () => {
    // the AWS SDK in this process reads its credentials from the process's environment
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'testing', AWS_SECRET_ACCESS_KEY: 'testing' });
    moto = await startMoto();
    const admin = new KMSClient({ region: 'eu-west-1', endpoint: moto.endpoint, credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' } });
    keyId = (await admin.send(new CreateKeyCommand({}))).KeyMetadata!.KeyId!;
    admin.destroy();
  }, 180_000);
  afterAll(async () => {
    moto?.resume();
    await moto?.stop();
  });

  it('the KMS paused while subjects are erased and protected at once: after each erasure returned nothing protects for it, its values answer SUBJECT_ERASED — then, after the KMS answers again, and after a restart', async () => {
    const env = awsKmsEnv(moto.endpoint, keyId, 3);
    let svc = await startTestService({ configText: CONFIG, env });
    let token = await svc.token();
    const subjects = Array.from({ length: 12 }, (_, i) => `kms-${i}`);
    for (const s of subjects) expect((await transform(svc, token, 'Protect', s, `${s}@example.org`)).status).toBe(200);
    const doomed = subjects.slice(0, 6);
    const erasedAt = new Map<string, number>();
    let loop: ReturnType<typeof protectLoop> | undefined;
    moto.pause();
    // the KMS answers again after 5 s, whatever the test is doing by then
    const resumed = new Promise<void>((r) => setTimeout(() => (moto.resume(), r()), 5000));
    try {
      const erasing = Promise.all(
        doomed.map(async (s, i) => {
          // spread over the pause: some before the KEK's lease runs out (3 s), some after
          await new Promise((r) => setTimeout(r, i * 700));
          // an erasure the KEK's lapse refuses (retriable) is tried again, as a caller would
          for (;;) {
            try {
              await svc.service.subjects.erase(s, { by: 'fault-test', reason: 'Art. 17 request' });
              break;
            } catch (e) {
              if (!(e as { retriable?: boolean }).retriable) throw e;
              await new Promise((r) => setTimeout(r, 250));
            }
          }
          erasedAt.set(s, performance.now());
        }),
      );
      loop = protectLoop(svc, token, subjects, erasing);
      await erasing;
      await loop.done;
    } finally {
      await resumed;
    }
    const calls = loop!.calls;
    const codes = new Set(calls.map((c) => c.code ?? c.status));
    // the KMS answered nothing for a while: some calls were refused for it (fail closed, never served past the lease)
    expect(codes.has('KMS_UNAVAILABLE')).toBe(true);
    // once it answers again (the KEK's lease renewed: /healthz green), every value of the erased
    // answers SUBJECT_ERASED, and no later protect succeeded for them
    await waitFor(async () => (await fetch(`${svc.url}/healthz`)).status === 200, 30_000, "the KEK's lease renewed");
    const tally = await expectErased(svc, token, erasedAt, calls);
    // restarted on its data dir: still erased
    const dir = svc.dataDir;
    await svc.service.app.close();
    svc = await startTestService({ configText: CONFIG, env, dataDir: dir });
    token = await svc.token();
    for (const s of doomed) expect((await transform(svc, token, 'Protect', s, `${s}@example.org`)).code).toBe('SUBJECT_ERASED');
    for (const s of subjects.slice(6)) expect((await transform(svc, token, 'Protect', s, `${s}@example.org`)).status).toBe(200);
    console.log(
      `KMS paused during erasures: ${calls.length} protects raced ${doomed.length} erasures; ${tally.refusedAfter} started after an erasure returned, all refused; ${tally.valuesErased} values protected before it answer SUBJECT_ERASED; codes ${JSON.stringify([...codes])}`,
    );
    await svc.close();
  }, 120_000);

  it('two hosts on one Kafka subject-key topic, one erasing and one protecting the same subjects at the same moment: after the erasure returned nothing protects on either host', async () => {
    const run = randomBytes(4).toString('hex');
    const topic = `veil.subjects.faults-${run}`;
    await createTopics(kafkaClient(), [topic], 3, { 'cleanup.policy': 'compact' });
    const env = { VEIL_SUBJECT_STORE: 'kafka', VEIL_SUBJECT_BROKERS: BROKERS.join(','), VEIL_SUBJECT_TOPIC: topic };
    const a = await startTestService({ configText: CONFIG, env });
    await a.service.subjects.status('warm-up');
    const dirB = await mkdtemp(join(tmpdir(), 'veil-faults-b-'));
    await copyFile(join(a.dataDir, 'keystore.json'), join(dirB, 'keystore.json'));
    const b = await startTestService({ configText: CONFIG, env, dataDir: dirB });
    const [tokenA, tokenB] = [await a.token(), await b.token()];
    try {
      const subjects = Array.from({ length: 10 }, (_, i) => `race-${run}-${i}`);
      const doomed = subjects.slice(0, 5);
      const erasedAt = new Map<string, number>();
      // the subjects have keys (B created them); B keeps protecting them while A erases them
      for (const s of subjects) expect((await transform(b, tokenB, 'Protect', s, `${s}@example.org`)).status).toBe(200);
      const erasing = Promise.all(
        doomed.map(async (s) => {
          await a.service.subjects.erase(s, { by: 'fault-test', reason: 'Art. 17 request' });
          erasedAt.set(s, performance.now());
        }),
      );
      const onB = protectLoop(
        b,
        tokenB,
        subjects,
        erasing.then(() => new Promise((r) => setTimeout(r, 300))),
      );
      await erasing;
      await onB.done;
      const onA = await expectErased(a, tokenA, erasedAt, onB.calls);
      const tallyB = await expectErased(b, tokenB, erasedAt, onB.calls);
      expect(onA).toEqual(tallyB);
      for (const s of doomed) {
        expect((await transform(a, tokenA, 'Protect', s, 'x@example.org')).code).toBe('SUBJECT_ERASED');
        expect((await transform(b, tokenB, 'Protect', s, 'x@example.org')).code).toBe('SUBJECT_ERASED');
      }
      console.log(
        `two hosts racing: ${onB.calls.length} protects on B raced ${doomed.length} erasures on A; ${tallyB.refusedAfter} started after an erasure returned, all refused; ${tallyB.valuesErased} values protected before it answer SUBJECT_ERASED on both hosts`,
      );
    } finally {
      await b.close();
      await a.close();
    }
  }, 120_000);
});
