import { describe, expect, it } from 'vitest';
import { VeilClientError } from '../../src/client/index.ts';
import { veilPrisma } from '../../src/client/prisma.ts';
import { fakeVeilClient, protectedOf } from './fake-veil.ts';

/**
 * The Prisma Client extension's query hook, driven as Prisma drives $allOperations, over the
 * scripted veil (the same hook against a real Prisma Client, PostgreSQL and veil serve is in
 * test/integration/client/client-package.test.ts).
 */
function setup() {
  const { fake, client } = fakeVeilClient();
  const ext = veilPrisma(client, {
    models: { Customer: { class: 'Customer', fields: { email: 'email', fullName: 'Customer.name' } } },
    roles: { protect: 'ingest', unprotect: 'fraud' },
  });
  const sent: Record<string, unknown>[] = [];
  const run = (
    model: string | undefined,
    operation: string,
    args: Record<string, unknown>,
    answer: (args: Record<string, unknown>) => unknown = (a) => a.data ?? null,
  ) => ext.query.$allModels.$allOperations({ model, operation, args, query: async (a) => (sent.push(a), answer(a)) });
  const roles = () =>
    fake.transformCalls().map((c) => (JSON.parse(c.body) as { rightsContexts: { evidences: { value: string }[] }[] }).rightsContexts[0]!.evidences[0]!.value);
  return { fake, run, sent, roles };
}

describe('veilPrisma: a Prisma Client extension', () => {
  it("a model naming its subject field: each row's values go in a request naming its subject (Subject evidence), rows of one subject together", async () => {
    const { fake, client } = fakeVeilClient();
    const ext = veilPrisma(client, { models: { Customer: { class: 'Customer', fields: { email: 'email' }, subject: 'customerId' } } });
    const rows = [
      { customerId: 7, email: 'a@example.com' },
      { customerId: 'c-8', email: 'b@example.com' },
      { customerId: 7, email: 'c@example.com' },
    ];
    const sent: Record<string, unknown>[] = [];
    await ext.query.$allModels.$allOperations({
      model: 'Customer',
      operation: 'createMany',
      args: { data: rows },
      query: async (a) => (sent.push(a), { count: 3 }),
    });
    expect((sent[0]!.data as { email: string }[]).map((r) => r.email)).toEqual(rows.map((r) => protectedOf(r.email)));
    const body = JSON.parse(fake.transformCalls()[0]!.body) as {
      processingContexts: { guid: string; evidences: { name: string; value: string }[] }[];
      requests: { processingContext: string; instances: unknown[] }[];
    };
    const subjectOf = (guid: string) => body.processingContexts.find((c) => c.guid === guid)!.evidences.find((e) => e.name === 'Subject')?.value;
    expect(body.requests.map((r) => [subjectOf(r.processingContext), r.instances.length])).toEqual([
      ['7', 2],
      ['c-8', 1],
    ]);
  });

  it('create: the data is protected before the query, in one call; the returned record is unprotected', async () => {
    const { fake, run, sent, roles } = setup();
    const out = await run('Customer', 'create', { data: { email: 'a@example.com', fullName: 'Alice', plan: 'pro' } });
    expect(sent[0]).toEqual({ data: { email: protectedOf('a@example.com'), fullName: protectedOf('Alice'), plan: 'pro' } });
    expect(out).toEqual({ email: 'a@example.com', fullName: 'Alice', plan: 'pro' });
    expect(roles()).toEqual(['ingest', 'fraud']);
    expect(fake.transformCalls()).toHaveLength(2);
  });

  it('createMany of 50 rows and an upsert (create and update) each take one protect call', async () => {
    const { fake, run, sent } = setup();
    const rows = Array.from({ length: 50 }, (_, i) => ({ email: `p${i}@example.com`, fullName: null }));
    expect(await run('Customer', 'createMany', { data: rows }, () => ({ count: 50 }))).toEqual({ count: 50 });
    expect(fake.transformCalls()).toHaveLength(1);
    expect((sent[0]!.data as { email: string }[]).map((r) => r.email)).toEqual(rows.map((r) => protectedOf(r.email)));
    expect((sent[0]!.data as { fullName: null }[]).every((r) => r.fullName === null)).toBe(true);
    await run('Customer', 'upsert', { where: { id: 1 }, create: { email: 'c@example.com' }, update: { fullName: 'Upd' } }, () => ({
      id: 1,
      email: protectedOf('c@example.com'),
      fullName: protectedOf('Upd'),
    }));
    expect(sent[1]).toEqual({ where: { id: 1 }, create: { email: protectedOf('c@example.com') }, update: { fullName: protectedOf('Upd') } });
    expect(fake.transformCalls()).toHaveLength(3); // createMany 1; upsert 1 protect + 1 unprotect
  });

  it('reads: a list, one record and null are unprotected in one call; counts pass through', async () => {
    const { fake, run } = setup();
    const stored = [
      { id: 1, email: protectedOf('x@example.com') },
      { id: 2, email: protectedOf('y@example.com') },
    ];
    expect(await run('Customer', 'findMany', { where: { id: { in: [1, 2] } } }, () => stored)).toEqual([
      { id: 1, email: 'x@example.com' },
      { id: 2, email: 'y@example.com' },
    ]);
    expect(await run('Customer', 'findUnique', { where: { id: 9 } }, () => null)).toBeNull();
    expect(await run('Customer', 'count', {}, () => 2)).toBe(2);
    expect(await run('Customer', 'updateMany', { where: { id: 1 }, data: { plan: 'free' } }, () => ({ count: 1 }))).toEqual({ count: 1 });
    expect(fake.transformCalls()).toHaveLength(1);
  });

  it('fails closed: a mapped field written with an atomic operation or a number is refused before the query runs', async () => {
    const { run, sent } = setup();
    await expect(run('Customer', 'update', { where: { id: 1 }, data: { email: { set: 'a@example.com' } } })).rejects.toMatchObject({
      code: 'FIELD_NOT_STRING',
      pointer: '/0/email',
    });
    await expect(run('Customer', 'create', { data: { fullName: 42 } })).rejects.toBeInstanceOf(VeilClientError);
    expect(sent).toEqual([]);
  });

  it('models it does not map, and raw queries, pass through untouched without a call', async () => {
    const { fake, run, sent } = setup();
    const args = { data: { email: 'keep@example.com' } };
    expect(await run('Order', 'create', args)).toEqual({ email: 'keep@example.com' });
    expect(await run(undefined, '$queryRaw', args)).toEqual({ email: 'keep@example.com' });
    expect(sent).toEqual([args, args]);
    expect(fake.transformCalls()).toHaveLength(0);
  });
});
