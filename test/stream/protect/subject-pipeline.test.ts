import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine, SecretKey } from '../../../src/engine/index.ts';
import { RecordProtector, type ChunkItem } from '../../../src/stream/protect/record-protector.ts';
import { jsonSerde } from '../../../src/stream/serde/json/json-serde.ts';
import { jsonSchemaSerde } from '../../../src/stream/serde/json-schema/json-schema-serde.ts';
import { FakeRegistry } from '../serde/fake-registry.ts';
import { openSubjectKeyStore, type SubjectKeyStore } from '../../../src/subjects/index.ts';
import { keysFor, veilConfigOrFail } from '../../helpers/engine-fixture.ts';
import { cleanup, keystoreIn, tempDir } from '../../subjects/helpers.ts';
import { personConfig, subjectCall } from '../../helpers/subject-config.ts';
import { parse } from 'yaml';
import { pipelineIssues, pipelineSchema } from '../../../src/stream/config/index.ts';

/** The pipeline `p` of configuration text, parsed by its schema but not cross-checked (pipelineIssues does that). */
const pipelineOf = (text: string) => pipelineSchema.parse((parse(text) as { pipelines: { p: unknown } }).pipelines.p);

/** A JSON pipeline whose fields are scoped to the data subject named by the record key (issue 29). */
const CONFIG = (subjectLine: string) =>
  personConfig({
    extra: `
pipelines:
  p:
    source: { topics: [raw] }
    sink: { topic: clean }
    deadLetterTopic: dlq
    format: json
    fields: [ { path: email, field: Person.email }, { path: city, field: Person.city } ]
${subjectLine}
    roles: [desk]
    rightsEvidences: { Role: desk }
    processingEvidences: { Action: Protect }
`,
  });

const stores: SubjectKeyStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
  await cleanup();
});

async function setup(subjectLine = '    subject: { from: key }') {
  const config = veilConfigOrFail(CONFIG(subjectLine));
  const engine = new Engine({ config: config.engine, keys: keysFor(config.engine) });
  const dir = await tempDir();
  const store = await openSubjectKeyStore({ keystore: await keystoreIn(dir, SecretKey.fromBytes(randomBytes(32))), dataDir: dir, maxStalenessMs: 300 });
  stores.push(store);
  return { config, engine, store, protector: new RecordProtector({ name: 'p', config: config.pipelines.p!, engine, serde: jsonSerde(), subjects: store }) };
}

const item = (key: string | null, email: string): ChunkItem => ({
  topic: 'clean',
  key: key === null ? null : Buffer.from(key),
  value: Buffer.from(`{"email":${JSON.stringify(email)},"city":"Oslo","n":1.50}`),
});

function unprotect(engine: Engine, subject: string, store: SubjectKeyStore, email: string) {
  return store
    .existing(subject)
    .then(
      (entry) =>
        engine.execute(
          engine.plan(subjectCall('Unprotect', [{ subject, values: [['email', email]] }]), { subject: 't', roles: ['desk'] }),
          new Map([[subject, entry]]),
        ).responses[0]!.instances[0]!.value,
    );
}

describe('a pipeline whose fields are scoped to the data subject of the record key', () => {
  it("protects each record under its key's subject; equal emails of two subjects differ; unmapped bytes pass as they are", async () => {
    const { engine, store, protector } = await setup();
    const out = await protector.protectChunk([item('cust-1', 'same@example.org'), item('cust-2', 'same@example.org'), item('cust-1', 'same@example.org')]);
    const emails = out.map((o) => JSON.parse(('value' in o ? o.value : Buffer.alloc(0)).toString()).email as string);
    expect(emails[0]).toBe(emails[2]);
    expect(emails[0]).not.toBe(emails[1]);
    expect(('value' in out[0]! ? out[0].value : Buffer.alloc(0)).toString()).toContain('"n":1.50');
    expect(await unprotect(engine, 'cust-1', store, emails[0]!)).toBe('same@example.org');
    expect(await unprotect(engine, 'cust-2', store, emails[1]!)).toBe('same@example.org');
  });

  it('a record without a key is dead-lettered SUBJECT_REQUIRED; a key that is no subject id SUBJECT_ID_INVALID; erased subjects SUBJECT_ERASED once refused', async () => {
    const { store, protector } = await setup();
    await store.erase('gone', { by: 'test', reason: 'test' });
    const out = await protector.protectChunk([item(null, 'a@example.org'), item('bad\u0000id', 'a@example.org'), item('ok', 'a@example.org')]);
    expect(out.map((o) => ('code' in o ? o.code : 'ok'))).toEqual(['SUBJECT_REQUIRED', 'SUBJECT_ID_INVALID', 'ok']);
    // returning: new-key (the default): an erased id protects again under a new generation
    const again = await protector.protectChunk([item('gone', 'a@example.org')]);
    expect('value' in again[0]!).toBe(true);
    expect(await store.status('gone')).toMatchObject({ state: 'exists', generation: 2 });
  });

  it("a rewrap carries an erased subject's values through unchanged and counts them; the others are re-protected", async () => {
    const { config, engine, store, protector } = await setup();
    const protectedRecords = await protector.protectChunk([item('keep', 'k@example.org'), item('erase-me', 'e@example.org')]);
    const clean = protectedRecords.map((o, i) => ({ topic: 'next', key: Buffer.from(i === 0 ? 'keep' : 'erase-me'), value: 'value' in o ? o.value : null }));
    await store.erase('erase-me', { by: 'test', reason: 'test' });
    const kept: number[] = [];
    const rewrap = new RecordProtector({
      name: 'p',
      config: config.pipelines.p!,
      engine,
      serde: jsonSerde(),
      subjects: store,
      rewrap: { unprotectEvidences: { Action: 'Unprotect' }, erasedKept: (n) => kept.push(n) },
    });
    const out = await rewrap.protectChunk(clean);
    expect(out.every((o) => 'value' in o)).toBe(true);
    const email = (o: (typeof out)[number]) => JSON.parse(('value' in o ? o.value : Buffer.alloc(0)).toString()).email as string;
    expect(email(out[1]!)).toBe(JSON.parse(clean[1]!.value!.toString()).email);
    expect(kept).toEqual([1]);
    expect(await unprotect(engine, 'keep', store, email(out[0]!))).toBe('k@example.org');
  });

  it('a json pipeline reads the subject at a path of the value (a number as its text): one subject per record, whatever the key; absent, duplicated or an object refused', async () => {
    const { engine, store, protector } = await setup('    subject: { from: value, path: customer.id }');
    const record = (body: string): ChunkItem => ({ topic: 'clean', key: null, value: Buffer.from(body) });
    const out = await protector.protectChunk([
      record('{"customer":{"id":"cust-7"},"email":"same@example.org","city":"Oslo"}'),
      record('{"customer":{"id":42},"email":"same@example.org","city":"Oslo"}'),
      record('{"email":"x@example.org","city":"Oslo"}'),
      record('{"customer":{"id":"a","id":"b"},"email":"x@example.org","city":"Oslo"}'),
      record('{"customer":{"id":"a","ID":"b"},"email":"x@example.org","city":"Oslo"}'),
      record('{"customer":{"id":{"n":1}},"email":"x@example.org","city":"Oslo"}'),
      record('{"customer":{"id":null},"email":"x@example.org","city":"Oslo"}'),
    ]);
    expect(out.map((o) => ('code' in o ? `${o.code} ${o.path}` : 'ok'))).toEqual([
      'ok',
      'ok',
      'SUBJECT_REQUIRED customer.id',
      'SUBJECT_ID_INVALID customer.id',
      'SUBJECT_ID_INVALID customer.id',
      'SUBJECT_ID_INVALID customer.id',
      'SUBJECT_REQUIRED customer.id',
    ]);
    const email = (o: (typeof out)[number]) => JSON.parse(('value' in o ? o.value : Buffer.alloc(0)).toString()).email as string;
    expect(email(out[0]!)).not.toBe(email(out[1]!));
    expect(await unprotect(engine, 'cust-7', store, email(out[0]!))).toBe('same@example.org');
    expect(await unprotect(engine, '42', store, email(out[1]!))).toBe('same@example.org');
    // the subject's own bytes pass as they are
    expect(('value' in out[1]! ? out[1].value : Buffer.alloc(0)).toString()).toContain('"customer":{"id":42}');
  });

  it('a json-schema pipeline reads the subject at a path of the JSON behind the wire-format header; a value without the header is RECORD_MALFORMED', async () => {
    const config = veilConfigOrFail(CONFIG('    subject: { from: value, path: customer.id }').replace('format: json', 'format: json-schema'));
    const engine = new Engine({ config: config.engine, keys: keysFor(config.engine) });
    const dir = await tempDir();
    const store = await openSubjectKeyStore({ keystore: await keystoreIn(dir, SecretKey.fromBytes(randomBytes(32))), dataDir: dir, maxStalenessMs: 300 });
    stores.push(store);
    const registry = new FakeRegistry();
    const id = registry.add({
      type: 'object',
      properties: { customer: { type: 'object', properties: { id: { type: ['string', 'integer'] } } }, email: { type: 'string' }, city: { type: 'string' } },
    });
    const protector = new RecordProtector({
      name: 'p',
      config: config.pipelines.p!,
      engine,
      serde: jsonSchemaSerde({ registry, protectedPaths: ['email', 'city'], foldKeys: true }),
      subjects: store,
    });
    const wire = (json: string) => {
      const header = Buffer.alloc(5);
      header.writeUInt32BE(id, 1);
      return Buffer.concat([header, Buffer.from(json)]);
    };
    const record = (value: Buffer): ChunkItem => ({ topic: 'clean', key: null, value });
    const out = await protector.protectChunk([
      record(wire('{"customer":{"id":"cust-7"},"email":"same@example.org","city":"Oslo"}')),
      record(wire('{"customer":{"id":42},"email":"same@example.org","city":"Oslo"}')),
      record(wire('{"email":"x@example.org","city":"Oslo"}')),
      record(Buffer.from('{"customer":{"id":"cust-7"},"email":"x@example.org"}')),
      record(Buffer.from([0, 0])),
    ]);
    expect(out.map((o) => ('code' in o ? `${o.code} ${o.path}` : 'ok'))).toEqual([
      'ok',
      'ok',
      'SUBJECT_REQUIRED customer.id',
      'RECORD_MALFORMED customer.id',
      'RECORD_MALFORMED customer.id',
    ]);
    const email = (o: (typeof out)[number]) => JSON.parse(('value' in o ? o.value : Buffer.alloc(5)).subarray(5).toString()).email as string;
    expect(email(out[0]!)).not.toBe(email(out[1]!));
    expect(await unprotect(engine, 'cust-7', store, email(out[0]!))).toBe('same@example.org');
    expect(await unprotect(engine, '42', store, email(out[1]!))).toBe('same@example.org');
  });

  it('a subject path needs a json or json-schema pipeline, one value, and no mapping on it', () => {
    const issues = (line: string, format = 'json') =>
      pipelineIssues(pipelineOf(CONFIG(line).replace('format: json', `format: ${format}`)), () => true).map((i) => `${i.pointer}: ${i.message}`);
    for (const format of ['avro', 'protobuf'])
      expect(issues('    subject: { from: value, path: customer.id }', format)).toEqual([
        expect.stringMatching(/^\/subject: a subject read from the value needs a json or json-schema pipeline/),
      ]);
    expect(issues('    subject: { from: value, path: customer.id }', 'json-schema')).toEqual([]);
    expect(issues('    subject: { from: value, path: Email }')).toEqual([expect.stringMatching(/^\/subject\/path: the subject path is mapped/)]);
    expect(issues('    subject: { from: value, path: "people[].id" }')).toEqual([expect.stringMatching(/^\/subject\/path: a subject path names one value/)]);
  });

  it('a pipeline mapping subject-scoped fields without saying where its subject is does not start', async () => {
    await expect(setup('')).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining('subject: { from: key }') });
  });
});
