import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_CONFIG } from '../../../src/env/index.ts';
import { openEngine } from '../../../src/app/open-engine.ts';
import { BROKERS, createTopics, javaConsumeCommitted, javaConsumeHeaders, kafkaClient, produce, topicsFor, expectKeyOrder } from '../../helpers/kafka.ts';
import { eventually, freePorts, ROOT } from '../../helpers/processes.ts';
import { samples } from '../../helpers/prometheus.ts';
import { pipelineEntry } from '../../helpers/pipeline-yaml.ts';

// npm test runs 5,000; npm run test:rewrap-100k the 100,000
const TOTAL = Number(process.env.VEIL_TEST_REWRAP_RECORDS ?? 5_000);
const PLANTED = 5;
const MASTER = 'e'.repeat(64);
const versionOf = (value: string) => Buffer.from(value, 'base64url').readUInt32BE(1);
const email = (id: number) => `user${id % 997}@example.com`;
const name = (id: number) => `Name ${id}`;
const card = (id: number) => `4111-1111-${String(1000 + (id % 9000)).padStart(4, '0')}-1111`;

/**
 * `veil stream rewrap` after a key rotation: a clean topic of TOTAL records protected under
 * version 1 of customer-siv and customer-gcm goes, re-protected, to a new topic while the rewrap
 * process is SIGKILLed once, inside a transaction's commit. Kafka's Java read_committed client, not veil, checks the new topic:
 * every id once, each key's ids in order, every AES value under version 2, every value reading
 * back to what was produced, the FF1-protected card (its key pinned) unchanged. Values under a
 * key version the key set does not hold go to the dead-letter topic with their code.
 */
describe('veil stream rewrap (real broker, real processes)', () => {
  const t = topicsFor('rewrap');
  const to = `${t.clean}.v2`;
  const kafka = kafkaClient('rewrap-test');
  let dataDir: string;
  let configFile: string;
  const children: ChildProcess[] = [];
  // a short session: the group hands the killed member's partitions on within seconds
  const env = () => ({
    ...process.env,
    KAFKA_BROKERS: BROKERS.join(','),
    VEIL_MASTER_KEY: MASTER,
    VEIL_LOG_LEVEL: 'warn',
    VEIL_KAFKA_SESSION_TIMEOUT_MS: '6000',
  });
  const veil = (args: string[], extra: Record<string, string> = {}, port = 0) => {
    const child = spawn(join(ROOT, 'bin/veil'), [...args, '--config', configFile, '--data-dir', dataDir, '--port', String(port)], {
      env: { ...env(), ...extra },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr!.on('data', (d) => (err += String(d)));
    children.push(child);
    return Object.assign(child, { err: () => err });
  };
  /** ids seen in a topic so far (read_committed, kafkajs: for progress only; Java checks the result) */
  const watch = async (topic: string) => {
    const ids = new Set<number>();
    const consumer = kafka.consumer({ groupId: `watch-${topic}-${Date.now()}`, readUncommitted: false });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachBatch: async ({ batch }) => void batch.messages.forEach((m) => ids.add((JSON.parse(m.value!.toString()) as { id: number }).id)) });
    return { ids, stop: () => consumer.disconnect() };
  };
  const stop = async (child: ChildProcess) => {
    if (child.exitCode !== null) return;
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'veil-rewrap-'));
    configFile = join(dataDir, 'config.yaml');
    await writeFile(
      configFile,
      `${await readFile(EXAMPLE_CONFIG, 'utf8')}
pipelines:
${pipelineEntry({
  name: 'customers',
  ...t,
  fields: ['{ path: email, field: Customer.email }', '{ path: name, field: Customer.name }', '{ path: card, field: Customer.cardNumber }'],
  settings: [`groupId: veil-protect-${t.id}`, 'key: { field: Customer.email }'],
})}`,
    );
    await createTopics(kafka, [t.raw, t.clean, to], 4);
    await createTopics(kafka, [t.dlq], 1);
    const raw = Array.from({ length: TOTAL }, (_, id) => ({
      key: email(id),
      value: JSON.stringify({ id, email: email(id), name: name(id), card: card(id), note: `n${id}` }),
    }));
    await produce(kafka, t.raw, raw);
    // the clean topic as a protect pipeline writes it, under version 1 of every key
    const seen = await watch(t.clean);
    const protect = veil(['stream', 'protect']);
    await eventually('the clean topic filled', async () => (seen.ids.size >= TOTAL ? true : undefined), 240_000);
    await seen.stop();
    await stop(protect);
  }, 400_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  it('re-protects every value under the new primary versions, exactly once through a SIGKILL; values under a version the key set lacks are dead-lettered', async () => {
    for (const id of ['customer-siv', 'customer-gcm']) {
      const { stdout } = await promisify(execFile)(join(ROOT, 'bin/veil'), ['keys', 'rotate', '--id', id, '--data-dir', dataDir], { env: env() });
      expect(stdout).toMatch(/version 2 is primary/);
    }
    // records whose email names key version 9: not in the key set
    const sample = JSON.parse((await javaConsumeCommitted(t.clean))[0]!.value) as { email: string; name: string; card: string };
    const planted = Array.from({ length: PLANTED }, (_, k) => {
      const bytes = Buffer.from(sample.email, 'base64url');
      bytes.writeUInt32BE(9, 1);
      return { key: bytes.toString('base64url'), value: JSON.stringify({ ...sample, id: TOTAL + k, email: bytes.toString('base64url') }) };
    });
    await produce(kafka, t.clean, planted);

    const done = await watch(to);
    const args = ['stream', 'rewrap', '--pipeline', 'customers', '--to', to, '--role', 'fraud'];
    // the first process SIGKILLs itself while a transaction's commit is in flight (fault-injection.ts)
    let rewrap = veil(args, { VEIL_FAULT_KILL_IN_COMMIT: '0.9' });
    await eventually(
      'the first rewrap process killed in a commit',
      async () => (rewrap.exitCode !== null || rewrap.signalCode !== null ? true : undefined),
      120_000,
    );
    expect(rewrap.signalCode).toBe('SIGKILL');
    const atKill = done.ids.size;
    const port = await freePorts(1);
    rewrap = veil(args, {}, port);
    await eventually('every record re-protected', async () => (done.ids.size >= TOTAL ? true : undefined), 240_000);
    // its lag 0 on every partition: every record of the clean topic, the planted ones too, read and
    // committed with what it wrote — nothing more will be written
    await eventually(
      'the rewrap caught up on every partition',
      async () => {
        const lags = samples(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()).filter(
          (m) => m.name === 'veil_stream_consumer_lag' && m.labels.topic === t.clean,
        );
        return lags.length === 4 && lags.every((m) => m.value === 0) ? true : undefined;
      },
      60_000,
    );
    await stop(rewrap);
    await done.stop();
    expect(rewrap.err()).not.toContain('@example.com');

    const java = (await javaConsumeCommitted(to)).map((r) => ({
      ...r,
      record: JSON.parse(r.value) as { id: number; email: string; name: string; card: string; note: string },
    }));
    const ids = java.map((r) => r.record.id);
    const unique = new Set(ids);
    console.log(
      `rewrap: ${TOTAL} records, SIGKILLed in a commit with ${atKill} re-protected; Java read_committed ${ids.length} records, ${ids.length - unique.size} duplicated, ${TOTAL - unique.size} lost`,
    );
    expect({ records: ids.length, unique: unique.size, planted: ids.filter((id) => id >= TOTAL).length }).toEqual({
      records: TOTAL,
      unique: TOTAL,
      planted: 0,
    });

    // every AES value under version 2; every value reads back; the pinned FF1 card as it was
    const { engine } = await openEngine({ configFile, dataDir, env: { VEIL_MASTER_KEY: MASTER }, now: () => new Date(), provision: false });
    const bind = (action: string) =>
      engine.bind({
        identity: { roles: ['fraud'] },
        rightsEvidences: [{ name: 'Role', value: 'fraud' }],
        processingEvidences: [{ name: 'Action', value: action }],
        fields: ['email', 'name', 'cardNumber'].map((propertyName) => ({ className: 'Customer', propertyName })),
      }).transforms;
    const [openEmail, openName, openCard] = bind('Unprotect');
    const [protectEmail, , protectCard] = bind('Protect');
    const bad: number[] = [];
    for (const { record: r } of java) {
      const ok =
        versionOf(r.email) === 2 &&
        versionOf(r.name) === 2 &&
        openEmail!(r.email) === email(r.id) &&
        openName!(r.name) === name(r.id) &&
        openCard!(r.card) === card(r.id) &&
        r.email === protectEmail!(email(r.id)) &&
        r.card === protectCard!(card(r.id)) &&
        r.note === `n${r.id}`;
      if (!ok) bad.push(r.id);
    }
    expect(bad.slice(0, 10)).toEqual([]);
    // one key, one partition, ids in order
    expect(expectKeyOrder(java)).toBe(997);

    const dead = await javaConsumeHeaders(t.dlq);
    expect(dead).toHaveLength(PLANTED);
    for (const d of dead) {
      expect(d.headers.find((h) => h.key === 'veil.error.code')?.value?.toString()).toBe('KEY_VERSION_UNKNOWN');
      expect(JSON.parse(d.value!.toString()).id).toBeGreaterThanOrEqual(TOTAL);
    }
  }, 600_000);
});
