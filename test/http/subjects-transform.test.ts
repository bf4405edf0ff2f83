import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/http-service.ts';
import { VeilClient } from '../../src/client/index.ts';
import { personConfig, subjectCall } from '../helpers/subject-config.ts';
import { expectProblem, expectProblemAt, transform, type Reply } from './support.ts';

/**
 * POST /transform with keys scoped to the data subject (issue 29), on the local subject-key store
 * of a real service: the Subject evidence names whose values a request carries; erasing a subject
 * makes its values answer SUBJECT_ERASED — on this service and on another one sharing the data dir.
 */
const CONFIG = personConfig();

const SUBJECTS = ['subject-ann@example.org', 'subject-bob@example.org', 'subject-cy@example.org'];
const clear = (s: string) =>
  [
    ['email', `mail-of-${s}`],
    ['name', `Name Of ${s}`],
    ['city', 'Oslo'],
  ] as [string, string][];

const call = (action: string, subject: string | undefined, instances: [string, string][]) => subjectCall(action, [{ subject, values: instances }]);

const values = (reply: Reply): string[] => reply.json.responses[0].instances.map((i: { value: string }) => i.value);

describe('POST /transform: keys scoped to the data subject', () => {
  let a: TestService;
  let b: TestService;
  let tokenA: string;
  let tokenB: string;
  const protectedOf = new Map<string, string[]>();

  beforeAll(async () => {
    a = await startTestService({ configText: CONFIG });
    // a second service on the same data dir: another process of the same host
    b = await startTestService({ configText: CONFIG, dataDir: a.dataDir });
    tokenA = await a.token();
    tokenB = await b.token('veil-dev', a.service.devClient!.secret);
    for (const s of SUBJECTS) {
      const reply = await transform(a, tokenA, call('Protect', s, clear(s)));
      expect(reply.status, reply.text).toBe(200);
      protectedOf.set(s, values(reply));
    }
  });

  afterAll(async () => {
    await b?.service.app.close();
    await a?.close();
  });

  it('protects each subject under its own key; both services unprotect it', async () => {
    for (const svc of [
      [a, tokenA],
      [b, tokenB],
    ] as const) {
      for (const s of SUBJECTS) {
        const reply = await transform(
          svc[0],
          svc[1],
          call(
            'Unprotect',
            s,
            clear(s).map(([p], i) => [p, protectedOf.get(s)![i]!]),
          ),
        );
        expect(reply.status, reply.text).toBe(200);
        expect(values(reply)).toEqual(clear(s).map(([, v]) => v));
      }
    }
    // equal emails of two subjects protect to different values (deterministic within a subject only)
    const same = await Promise.all(SUBJECTS.slice(0, 2).map((s) => transform(a, tokenA, call('Protect', s, [['email', 'same@example.org']]))));
    expect(values(same[0]!)[0]).not.toBe(values(same[1]!)[0]);
  });

  it("a scoped field without a Subject is 422 SUBJECT_REQUIRED; another subject's value is PROTECTED_VALUE_INVALID", async () => {
    expectProblemAt(
      await transform(
        a,
        tokenA,
        call('Protect', undefined, [
          ['city', 'Oslo'],
          ['email', 'x@example.org'],
        ]),
      ),
      'SUBJECT_REQUIRED',
      '/requests/0/instances/1',
    );
    const [ann, bob] = SUBJECTS;
    expectProblemAt(
      await transform(a, tokenA, call('Unprotect', bob, [['email', protectedOf.get(ann!)![0]!]])),
      'PROTECTED_VALUE_INVALID',
      '/requests/0/instances/0/value',
    );
  });

  it("after an erasure on one service, the subject's values answer SUBJECT_ERASED on both; the others unprotect; audited, never named", async () => {
    const bob = SUBJECTS[1]!;
    const bobValues = clear(bob).map(([p], i) => [p, protectedOf.get(bob)![i]!] as [string, string]);
    // b has bob's key in its cache before the erasure
    expect((await transform(b, tokenB, call('Unprotect', bob, bobValues))).status).toBe(200);
    const erasure = await a.service.subjects.erase(bob, { by: 'test', reason: 'Art. 17 request' });
    expect(erasure.destroyedKey).toMatch(/^[0-9a-f]{64}$/);
    for (const [svc, token] of [
      [a, tokenA],
      [b, tokenB],
    ] as const) {
      const reply = await transform(svc, token, call('Unprotect', bob, bobValues.slice(0, 2)));
      const problem = expectProblemAt(reply, 'SUBJECT_ERASED', '/requests/0/instances/0/value');
      expect(problem.errors.map((e: { code: string }) => e.code)).toEqual(['SUBJECT_ERASED', 'SUBJECT_ERASED']);
      expect(reply.text).not.toContain(bob);
      const failed = svc.audit.events.filter((e) => e.code === 'SUBJECT_ERASED');
      expect(failed.length).toBeGreaterThan(0);
      expect(failed.at(-1)!.outcome).toBe('failed');
    }
    // the shared-key field of the same record is not the subject's key: it still unprotects
    const city = await transform(a, tokenA, call('Unprotect', bob, [bobValues[2]!]));
    expect(values(city)).toEqual(['Oslo']);
    for (const s of [SUBJECTS[0]!, SUBJECTS[2]!]) {
      const reply = await transform(
        b,
        tokenB,
        call(
          'Unprotect',
          s,
          clear(s).map(([p], i) => [p, protectedOf.get(s)![i]!]),
        ),
      );
      expect(values(reply)).toEqual(clear(s).map(([, v]) => v));
    }
    for (const text of [...a.logs, ...b.logs, JSON.stringify(a.audit.events), JSON.stringify(b.audit.events)]) expect(text).not.toContain(bob);
  });

  it('a returning person gets a new key (subjects.returning defaults to new-key); the erased values stay erased', async () => {
    const bob = SUBJECTS[1]!;
    const again = await transform(a, tokenA, call('Protect', bob, [['email', 'new-mail@example.org']]));
    expect(again.status, again.text).toBe(200);
    const back = await transform(b, tokenB, call('Unprotect', bob, [['email', values(again)[0]!]]));
    expect(values(back)).toEqual(['new-mail@example.org']);
    expectProblem(await transform(b, tokenB, call('Unprotect', bob, [['email', protectedOf.get(bob)![0]!]])), 'SUBJECT_ERASED');
    expect((await a.service.subjects.status(bob)).state).toBe('exists');
  });

  it("the application SDK names each object's subject (protectFields with subject): one call, one request per subject, each value under its own key", async () => {
    const client = new VeilClient({ url: a.url, clientId: 'veil-dev', clientSecret: a.service.devClient!.secret, role: 'desk' });
    const people = [
      { id: 'sdk-1', email: 'one@example.org', city: 'Oslo' },
      { id: 'sdk-2', email: 'same@example.org', city: 'Rome' },
      { id: 'sdk-1', email: 'same@example.org', city: 'Oslo' },
    ];
    const fields = { email: 'Person.email', city: 'Person.city' };
    const stored = await client.protectFields(fields, people, { subject: (p) => p.id });
    expect(stored.map((p) => p.id)).toEqual(['sdk-1', 'sdk-2', 'sdk-1']);
    expect(stored[1]!.email).not.toBe(stored[2]!.email);
    expect(await client.unprotectFields(fields, stored, { subject: (p) => p.id })).toEqual(people);
    // the wrong subject does not open another's values; the error points into the objects
    await expect(client.unprotectFields(fields, stored[1]!, { subject: 'sdk-1' })).rejects.toMatchObject({
      code: 'PROTECTED_VALUE_INVALID',
      pointer: '/email',
    });
    await expect(client.protectFields(fields, people[0]!)).rejects.toMatchObject({ code: 'SUBJECT_REQUIRED' });
  });

  it('a Subject that is no subject id is 400 SUBJECT_ID_INVALID', async () => {
    expectProblemAt(await transform(a, tokenA, call('Protect', 'a\u0001b', [['email', 'x']])), 'SUBJECT_ID_INVALID', '/processingContexts/0/evidences/1/value');
  });
});
