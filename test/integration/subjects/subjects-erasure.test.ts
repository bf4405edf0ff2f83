import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStream, type StreamService } from '../../../src/app/open-stream.ts';
import { startTestService, type TestService } from '../../helpers/http-service.ts';
import { BROKERS, consume, createTopics, kafkaClient, produce, type Consumed } from '../../helpers/kafka.ts';
import { QUICK_COMPACTION } from '../../subjects/kafka-helpers.ts';
import { readRaw } from '../../subjects/raw-topic.ts';
import { waitFor } from '../../helpers/processes.ts';
import { installSql } from '../../../src/db/install-sql.ts';
import { verifyReceipt } from '../../../src/subjects/index.ts';
import { sql } from '../../helpers/postgres.ts';
import { personConfig, subjectCall } from '../../helpers/subject-config.ts';
import { pipelineEntry } from '../../helpers/pipeline-yaml.ts';

/**
 * Erasure end to end (issue 29): 10,000 data subjects' values (1,000 under npm test) protected through POST /transform, a
 * stream pipeline into a clean topic and a PostgreSQL table's trigger, under keys scoped to each
 * subject, on a shared Kafka subject-key topic; 100 subjects erased on host A. Then, on host A, on
 * host B (its own data dir, following the topic) and on B restarted: every value of the 100 answers
 * SUBJECT_ERASED (the table's read view: NULL, with a SUBJECT_ERASED notice), every other value
 * unprotects to what was sent — the clean topic and a backup copy of it taken before the erasure
 * alike; the subject-key topic, read raw after compaction, holds no key of the 100.
 */
// npm test: 1,000 subjects; `npm run test:erase-10k` runs the 10,000 (the same checks, ten times the rows)
const SUBJECTS = Number(process.env.VEIL_ERASURE_SUBJECTS ?? 1_000);
const ERASED = 100;
const PER_CALL = 100;

const run = randomBytes(4).toString('hex');
const topics = { raw: `erasure-raw-${run}`, clean: `erasure-clean-${run}`, dlq: `erasure-dlq-${run}`, subjects: `veil.subjects.erasure-${run}` };

const CONFIG = personConfig({
  extra: `service:
  rateLimit: { transformPerSecond: 100000, transformBurst: 100000 }
pipelines:
${pipelineEntry({
  name: 'people',
  ...topics,
  fields: ['{ path: email, field: Person.email }', '{ path: name, field: Person.name }', '{ path: city, field: Person.city }'],
  settings: [`groupId: veil-erasure-${run}`, 'subject: { from: key }'],
  role: 'desk',
})}`,
});

const ENV = { VEIL_SUBJECT_STORE: 'kafka', VEIL_SUBJECT_BROKERS: BROKERS.join(','), VEIL_SUBJECT_TOPIC: topics.subjects, VEIL_SUBJECT_PARTITIONS: '3' };
// customer numbers, not emails: a record key that is an email is personal data in clear, refused by the unmapped guard
const ids = Array.from({ length: SUBJECTS }, (_, i) => `cust-${run}-${i}`);
const erasedIds = new Set(ids.filter((_, i) => i % (SUBJECTS / ERASED) === 7));
const clear = (id: string) => ({ email: `${id}@example.org`, name: `Name ${id}`, city: 'Oslo' });
type Field = 'email' | 'name' | 'city';

const callBody = (action: string, items: readonly { id: string; values: [Field, string][] }[]) =>
  subjectCall(
    action,
    items.map((it) => ({ subject: it.id, values: it.values })),
  );

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function transform(svc: TestService, token: string, payload: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${svc.url}/transform`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(payload),
  });
  return { status: res.status, json: await res.json() };
}

const db = { name: `veil_erasure_${run}`, writer: `writer_${run}`, reader: `reader_${run}` };
const onDb = (script: string, user = 'postgres') => sql(script, { database: db.name, user });
/** Points the database's veil client at `svc` (its development client's credentials; the writer protects as ingest). */
const configureDb = (svc: TestService) => onDb(`SELECT veil.configure('${svc.url}', 'veil-dev', '${svc.service.devClient!.secret}', 'ingest');`);

const chunks = <T>(list: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(list.length / size) }, (_, i) => list.slice(i * size, (i + 1) * size));

describe('erasure across HTTP, a stream pipeline and a table, on three hosts of one Kafka subject-key topic', () => {
  let a: TestService;
  let b: TestService;
  let stream: StreamService;
  let streamDir: string;
  const tokens = new Map<TestService, string>();
  /** what HTTP protected: subject → field → protected value */
  const viaHttp = new Map<string, [Field, string][]>();
  let backup: Consumed[] = [];

  beforeAll(async () => {
    const kafka = kafkaClient();
    await createTopics(kafka, [topics.subjects], 3, { 'cleanup.policy': 'compact', ...QUICK_COMPACTION });
    await createTopics(kafka, [topics.raw, topics.clean, topics.dlq], 2);
    a = await startTestService({ configText: CONFIG, env: ENV });
    await a.service.subjects.status('warm-up'); // opens the store: the key set's subject keys exist from here on
    // hosts B and the stream's: data dirs of their own with the key set (in production the control store shares it)
    const dirB = await mkdtemp(join(tmpdir(), 'veil-erasure-b-'));
    streamDir = await mkdtemp(join(tmpdir(), 'veil-erasure-stream-'));
    for (const dir of [dirB, streamDir]) await copyFile(join(a.dataDir, 'keystore.json'), join(dir, 'keystore.json'));
    b = await startTestService({ configText: CONFIG, env: ENV, dataDir: dirB });
    tokens.set(a, await a.token());
    tokens.set(b, await b.token('veil-dev', a.service.devClient!.secret).catch(async () => b.token()));

    // HTTP: each subject's email and name (scoped) and city (shared key)
    for (const batch of chunks(ids, PER_CALL)) {
      const reply = await transform(
        a,
        tokens.get(a)!,
        callBody(
          'Protect',
          batch.map((id) => ({ id, values: Object.entries(clear(id)) as [Field, string][] })),
        ),
      );
      expect(reply.status, JSON.stringify(reply.json).slice(0, 300)).toBe(200);
      reply.json.responses.forEach((r: { instances: { propertyName: Field; value: string }[] }, i: number) =>
        viaHttp.set(
          batch[i]!,
          r.instances.map((x) => [x.propertyName, x.value]),
        ),
      );
    }
    // the stream: the same subjects' records, keyed by subject id
    const configFile = join(streamDir, 'config.yaml');
    await writeFile(configFile, CONFIG);
    stream = await openStream({
      configFile,
      dataDir: streamDir,
      env: { VEIL_MASTER_KEY: 'a'.repeat(64), ...ENV },
      now: () => new Date(),
      brokers: BROKERS,
      development: true,
    });
    await stream.start();
    await produce(
      kafka,
      topics.raw,
      ids.map((id) => ({ key: id, value: JSON.stringify({ ...clear(id), id }) })),
    );
    backup = await consume(kafka, topics.clean, SUBJECTS, 240_000);
    // the table: one row per subject, protected by the row trigger calling host A
    await sql(`CREATE DATABASE ${db.name};\nCREATE ROLE ${db.writer} LOGIN;\nCREATE ROLE ${db.reader} LOGIN;`);
    await onDb(installSql());
    await configureDb(a);
    await onDb(`CREATE TABLE people (id int PRIMARY KEY, subject text, email text, name text, city text);
      SELECT veil.attach('people', 'email', 'Person', 'email'); SELECT veil.attach('people', 'name', 'Person', 'name');
      SELECT veil.attach('people', 'city', 'Person', 'city'); SELECT veil.attach_subject('people', 'subject');
      SELECT veil.grant_writer('${db.writer}', 'people'); SELECT veil.create_read_view('people', 'people_clear');
      SELECT veil.grant_reader('${db.reader}', 'desk', 'people', 'people_clear');
      SELECT veil.set_rate_limit('${db.writer}', 1000000); SELECT veil.set_rate_limit('${db.reader}', 1000000);`);
    await onDb(
      `INSERT INTO people SELECT i, 'cust-${run}-' || i, 'cust-${run}-' || i || '@example.org', 'Name cust-${run}-' || i, 'Oslo' FROM generate_series(0, ${SUBJECTS - 1}) i;`,
      db.writer,
    );
  }, 600_000);

  afterAll(async () => {
    await sql(`DROP DATABASE IF EXISTS ${db.name} WITH (FORCE);\nDROP ROLE IF EXISTS ${db.writer};\nDROP ROLE IF EXISTS ${db.reader};`).catch(() => undefined);
    await stream?.stop();
    await b?.close();
    await a?.close();
    if (streamDir) await rm(streamDir, { recursive: true, force: true });
  });

  /** The table's rows through its read view, unprotected by the veil service the database is configured with. */
  async function checkTable(svc: TestService): Promise<{ erased: number; readable: number; stored: number }> {
    await configureDb(svc);
    const stored = await onDb(`SELECT count(*) FROM people WHERE email LIKE 'cust-%' OR name LIKE 'Name %'`);
    expect(stored).toEqual(['0']);
    const [readable] = await onDb(
      `SELECT count(*) FROM people_clear WHERE email = subject || '@example.org' AND name = 'Name ' || subject AND city = 'Oslo'`,
      db.reader,
    );
    const nulls = await onDb(`SELECT subject FROM people_clear WHERE email IS NULL AND name IS NULL AND city = 'Oslo' ORDER BY subject`, db.reader);
    expect(nulls).toEqual([...erasedIds].sort());
    return { erased: nulls.length * 2, readable: Number(readable) * 3, stored: Number(stored[0]) };
  }

  /** Unprotects the values of subjects not erased on `svc`, in batches: each must come back as its subject's clear value. How many did. */
  async function expectReadable(svc: TestService, token: string, items: readonly { id: string; values: [Field, string][] }[]): Promise<number> {
    let readable = 0;
    for (const batch of chunks(items, PER_CALL)) {
      const reply = await transform(svc, token, callBody('Unprotect', batch));
      expect(reply.status).toBe(200);
      reply.json.responses.forEach((r: { instances: { propertyName: Field; value: string }[] }, i: number) => {
        for (const x of r.instances) expect(x.value).toBe(clear(batch[i]!.id)[x.propertyName]);
        readable += r.instances.length;
      });
    }
    return readable;
  }

  /** Unprotects every subject's HTTP values on `svc`: erased ones one call each (the call fails as a whole), the others in batches. */
  async function checkHttpValues(svc: TestService, token: string): Promise<{ erased: number; readable: number }> {
    let erased = 0;
    const kept = ids.filter((id) => !erasedIds.has(id));
    const readable = await expectReadable(
      svc,
      token,
      kept.map((id) => ({ id, values: viaHttp.get(id)! })),
    );
    for (const id of erasedIds) {
      const scoped = viaHttp.get(id)!.filter(([p]) => p !== 'city');
      const reply = await transform(svc, token, callBody('Unprotect', [{ id, values: scoped }]));
      expect(reply.status).toBe(422);
      expect(reply.json.errors.map((e: { code: string }) => e.code)).toEqual(scoped.map(() => 'SUBJECT_ERASED'));
      expect(JSON.stringify(reply.json)).not.toContain(id);
      erased += scoped.length;
    }
    return { erased, readable };
  }

  /** Unprotects the email and name of every record of a copy of the clean topic, naming the record key's subject. */
  async function checkCleanRecords(svc: TestService, token: string, records: readonly Consumed[]): Promise<{ erased: number; readable: number }> {
    let erased = 0;
    const items = records.map((r) => ({ id: r.key!.toString(), record: JSON.parse(r.value!.toString()) as Record<Field, string> }));
    expect(new Set(items.map((x) => x.id)).size).toBe(SUBJECTS);
    const kept = items.filter((x) => !erasedIds.has(x.id));
    const valuesOf = (record: Record<Field, string>, fields: readonly Field[]) => fields.map((f): [Field, string] => [f, record[f]]);
    const readable = await expectReadable(
      svc,
      token,
      kept.map((x) => ({ id: x.id, values: valuesOf(x.record, ['email', 'name', 'city']) })),
    );
    for (const x of items.filter((i) => erasedIds.has(i.id))) {
      const reply = await transform(svc, token, callBody('Unprotect', [{ id: x.id, values: valuesOf(x.record, ['email', 'name']) }]));
      expect(reply.json.errors?.map((e: { code: string }) => e.code)).toEqual(['SUBJECT_ERASED', 'SUBJECT_ERASED']);
      erased += 2;
    }
    return { erased, readable };
  }

  it('erasing 100 subjects on host A makes their values SUBJECT_ERASED on A, on B and on B restarted — HTTP values, the clean topic and its backup copy — and only theirs', async () => {
    const kafka = kafkaClient();
    const started = Date.now();
    // ten through the admin API (a publisher's token, signed receipts), the others as the store's callers do
    const [viaApi, viaStore] = [[...erasedIds].slice(0, 10), [...erasedIds].slice(10)];
    const [receipts, erasures] = await Promise.all([
      Promise.all(
        viaApi.map(async (id) => {
          const res = await fetch(`${a.url}/admin/subjects/erase`, {
            method: 'POST',
            headers: { authorization: `Bearer ${tokens.get(a)}`, 'content-type': 'application/json' },
            body: JSON.stringify({ subject: id, reason: 'Art. 17 request' }),
          });
          expect(res.status).toBe(200);
          return ((await res.json()) as { receipt: string }).receipt;
        }),
      ),
      Promise.all(viaStore.map((id) => a.service.subjects.erase(id, { by: 'integration-test', reason: 'Art. 17 request' }))),
    ]);
    const eraseMs = Date.now() - started;
    expect(erasures.every((e) => /^[0-9a-f]{64}$/.test(e.destroyedKey ?? ''))).toBe(true);
    // each receipt verifies against the key set and names the subject's reference, never its id
    for (const [i, receipt] of receipts.entries()) {
      const claims = await verifyReceipt(receipt, a.service.keystore);
      expect(claims).toMatchObject({
        sub: (await b.service.subjects.status(viaApi[i]!)).subject,
        alreadyErased: false,
        destroyedKey: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      expect(Buffer.from(receipt.split('.')[1]!, 'base64url').toString()).not.toContain(viaApi[i]!);
    }

    const tallies: Record<string, unknown> = { eraseMs };
    tallies.httpOnA = await checkHttpValues(a, tokens.get(a)!);
    tallies.tableOnA = await checkTable(a);
    tallies.httpOnB = await checkHttpValues(b, tokens.get(b)!);
    tallies.tableOnB = await checkTable(b);
    const clean = await consume(kafka, topics.clean, SUBJECTS, 60_000);
    tallies.cleanOnB = await checkCleanRecords(b, tokens.get(b)!, clean);
    // host B restarted on its data dir: its view resumes from its stored offsets
    const dirB = b.dataDir;
    await b.service.app.close();
    b = await startTestService({ configText: CONFIG, env: ENV, dataDir: dirB });
    const tokenB = await b.token();
    tallies.httpOnRestartedB = await checkHttpValues(b, tokenB);
    tallies.backupOnRestartedB = await checkCleanRecords(b, tokenB, backup);
    tallies.tableOnRestartedB = await checkTable(b);
    tokens.set(b, tokenB);
    console.log(`erasure test: ${SUBJECTS} subjects, ${ERASED} erased: ${JSON.stringify(tallies)}`);
    for (const key of ['httpOnA', 'httpOnB', 'httpOnRestartedB'] as const)
      expect(tallies[key]).toEqual({ erased: ERASED * 2, readable: (SUBJECTS - ERASED) * 3 });
    for (const key of ['tableOnA', 'tableOnB', 'tableOnRestartedB'] as const)
      expect(tallies[key]).toEqual({ erased: ERASED * 2, readable: (SUBJECTS - ERASED) * 3, stored: 0 });
    for (const key of ['cleanOnB', 'backupOnRestartedB'] as const) expect(tallies[key]).toEqual({ erased: ERASED * 2, readable: (SUBJECTS - ERASED) * 3 });
  }, 600_000);

  it('the subject-key topic, read raw after compaction, holds no key material of the 100 (their erasure records stay)', async () => {
    const kafka = kafkaClient();
    const refs = new Set<string>();
    for (const id of erasedIds) refs.add((await a.service.subjects.status(id)).subject);
    const keyRecordsOfErased = (records: Awaited<ReturnType<typeof readRaw>>) =>
      records.filter((m) => m.key.startsWith('k/') && m.value && refs.has(m.key.split('/')[1]!));
    let raw: Awaited<ReturnType<typeof readRaw>> = [];
    await waitFor(
      async () => {
        raw = await readRaw(kafka, topics.subjects);
        if (keyRecordsOfErased(raw).length === 0) return true;
        await a.service.subjects.keyFor(`filler-${randomBytes(4).toString('hex')}`); // rolls segments, so the cleaner can take them
        return false;
      },
      120_000,
      "the cleaner to remove the erased subjects' key records",
    );
    expect(keyRecordsOfErased(raw)).toEqual([]);
    expect(raw.filter((m) => m.key.startsWith('e/') && refs.has(m.key.slice(2))).length).toBe(ERASED);
    const everything = Buffer.concat(raw.flatMap((m) => [Buffer.from(m.key), m.value ?? Buffer.alloc(0)]));
    for (const id of erasedIds) expect(everything.includes(Buffer.from(id))).toBe(false);
  }, 180_000);
});
