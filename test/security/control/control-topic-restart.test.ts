// Attack (issue 31): whoever can write to the control-store topic without the key set appends
// records after the genuine history — a configuration version copied from a genuine one with a
// grant widened and a made-up MAC, a key set of theirs, garbage, a genuine version replayed. None
// of it may stop a process (running, restarted on its data dir, new on an empty one) or steer one:
// each runs the newest authenticated version, its data dir mirrors only authenticated versions,
// and the portal offers nothing forged to view, export or revert to. Real broker, `veil serve`
// processes, the portal over HTTP with its session and CSRF token.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROKERS, kafkaClient } from '../../helpers/kafka.ts';
import { MASTER_KEY_HEX } from '../../helpers/http-service.ts';
import { portalConfigText } from '../../helpers/portal-client.ts';
import { eventually, ROOT } from '../../helpers/processes.ts';
import { portalSession, startVeilServe, type VeilProcess } from '../../helpers/veil-process.ts';

const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const ANCHOR = '      segmentKey: { protect: name-pseudonym, unprotect: none }';
const withProperty = (text: string, name: string) => text.replace(ANCHOR, `${ANCHOR}\n      ${name}: { protect: name-randomized }`);

interface Index {
  active: number;
  versions: { number: number; by: string; note: string; auth?: unknown }[];
}
const indexOf = async (dataDir: string) => JSON.parse(await readFile(join(dataDir, 'config-versions', 'index.json'), 'utf8')) as Index;

describe('forged, garbage and replayed records on the control topic stop and steer nothing', () => {
  const topic = `veil.control.restart.${randomBytes(4).toString('hex')}`;
  const kafka = kafkaClient('forger-restart');
  const producer = kafka.producer();
  const reader = kafka.consumer({ groupId: `forger-restart-${randomBytes(4).toString('hex')}` });
  const records: Record<string, unknown>[] = [];
  const started: VeilProcess[] = [];
  const kept = { dir: '' };
  let configText = '';
  let forgedNumber = 0;

  const storeEnv = () => ({ VEIL_CONTROL_STORE: 'kafka', VEIL_CONTROL_TOPIC: topic, KAFKA_BROKERS: BROKERS.join(',') });
  const start = async (dataDir?: string) => {
    const p = await startVeilServe({ configText, env: storeEnv(), ...(dataDir ? { dataDir } : {}) });
    started.push(p);
    return p;
  };
  const head = (history: string) => Math.max(0, ...records.filter((r) => r.history === history).map((r) => (r.basedOn as number) + 1));
  const write = (value: unknown) =>
    producer.send({ topic, messages: [{ key: `config:${randomBytes(6).toString('hex')}`, value: typeof value === 'string' ? value : JSON.stringify(value) }] });
  const protect = async (p: VeilProcess, property: string) => {
    const secret = (await readFile(join(p.dataDir, 'dev-client.secret'), 'utf8')).trim();
    const t = await p.request('/connect/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: secret }).toString(),
    });
    const token = (JSON.parse(t.text) as { access_token: string }).access_token;
    const body = {
      rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: 'fraud' }] }],
      processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: 'Protect' }] }],
      requests: [
        { guid: guid(3), rightsContext: guid(1), processingContext: guid(2), instances: [{ className: 'Customer', propertyName: property, value: 'x' }] },
      ],
    };
    return (
      await p.request('/transform', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    ).status;
  };
  /** what a process runs and mirrors: the genuine grant, not the forged one; no forged version in its index */
  const onGenuineHistory = async (p: VeilProcess) => {
    expect([await protect(p, 'email'), await protect(p, 'forged')]).toEqual([200, 422]);
    const index = await indexOf(p.dataDir);
    expect(index.versions.map((v) => v.number)).not.toContain(forgedNumber);
    expect(index.versions.every((v) => v.auth !== undefined)).toBe(true);
    expect(index.active).not.toBe(forgedNumber);
    expect((await p.request('/healthz')).status).toBe(200);
  };

  beforeAll(async () => {
    configText = await portalConfigText();
    kept.dir = await mkdtemp(join(tmpdir(), 'veil-forgery-restart-'));
    await producer.connect();
    await reader.connect();
    // the first process creates the topic (one partition, compacted); the forger reads it after
    const first = await start(kept.dir);
    await reader.subscribe({ topic, fromBeginning: true });
    await reader.run({
      eachMessage: async ({ message }) => {
        try {
          records.push(JSON.parse(message.value!.toString()) as Record<string, unknown>);
        } catch {
          /* garbage */
        }
      },
    });
    await eventually('the adopted version read', async () => (records.some((r) => r.history === 'config' && r.auth) ? true : undefined));
    expect(await protect(first, 'forged')).toBe(422);

    // the forger's records: a widened copy of the genuine version with the genuine author and a
    // made-up MAC, a key set with a made-up MAC, garbage, and the genuine version replayed
    const genuine = records.find((r) => r.history === 'config' && r.auth)!;
    forgedNumber = head('config') + 1;
    await write({
      ...genuine,
      basedOn: head('config'),
      writer: 'mallory',
      body: withProperty(configText, 'forged'),
      meta: { by: 'admin', source: 'portal', note: 'routine change' },
      auth: { key: 1, mac: randomBytes(32).toString('base64url') },
    });
    await eventually('the forgery read', async () => (records.some((r) => r.writer === 'mallory') ? true : undefined));
    const keyset = records.filter((r) => r.history === 'keyset').at(-1)!;
    await write({
      ...keyset,
      basedOn: head('keyset'),
      writer: 'mallory-keys',
      body: Buffer.from('{"format":"veil-keyset","ciphertext":"AAAA"}').toString('base64'),
      auth: { key: 1, mac: randomBytes(32).toString('base64url') },
    });
    await write('{"v":1,"history":"config","basedOn":');
    await write({ ...genuine, basedOn: head('config') + 1 });
    await eventually('the forged key set read', async () => (records.some((r) => r.writer === 'mallory-keys') ? true : undefined));
    await eventually(
      'the first process said so',
      async () => (/configuration version \d+ of the control store is not authenticated/.test(first.output()) ? true : undefined),
      10_000,
    );
  }, 180_000);

  afterAll(async () => {
    await producer.disconnect();
    await reader.disconnect();
    for (const p of started) await p.stop();
    await rm(kept.dir, { recursive: true, force: true });
  });

  it('the running process keeps the genuine version and mirrors none of the forgeries', async () => {
    await onGenuineHistory(started[0]!);
    expect(started[0]!.output()).not.toMatch(/routine change|mallory/);
  }, 60_000);

  it('a new process on an empty data dir starts on the newest authenticated version', async () => {
    const fresh = await start();
    await onGenuineHistory(fresh);
    expect(fresh.output()).toMatch(new RegExp(`configuration version ${forgedNumber} of the control store is not authenticated`));
  }, 120_000);

  it('a process restarted on its own data dir starts, on the genuine history', async () => {
    await started[0]!.stop();
    const again = await start(kept.dir);
    await onGenuineHistory(again);
  }, 120_000);

  it('the portal lists no forged version and offers none to view, export or revert to; a revert to it changes nothing', async () => {
    const p = started.at(-1)!;
    const publisher = await portalSession(p, 'publisher');
    const list = await publisher.get('/admin/versions');
    expect(list.status).toBe(200);
    expect(list.text).not.toContain(`/admin/versions/${forgedNumber}"`);
    expect(list.text).not.toMatch(/routine change/);
    for (const path of [`/admin/versions/${forgedNumber}`, `/admin/versions/${forgedNumber}/export`, `/admin/diff?from=v${forgedNumber}`])
      expect((await publisher.get(path)).status).toBe(404);
    const revert = await publisher.post(`/admin/versions/${forgedNumber}/revert`, {});
    expect(revert.status).toBe(404);
    // a record of no history written after the answer: once the reader has it, it has every record
    // the revert could have written before answering (one partition: the topic's order)
    const marker = `after-revert-${randomBytes(4).toString('hex')}`;
    await write({ marker });
    await eventually('the marker read', async () => (records.some((r) => r.marker === marker) ? true : undefined));
    await onGenuineHistory(p);
    expect(
      records.filter((r) => r.history === 'config' && typeof r.body === 'string' && (r.body as string).includes('forged: {') && r.writer !== 'mallory'),
    ).toEqual([]);
  }, 60_000);

  it('the next genuine publish runs on every process; the forged version stays out', async () => {
    const cliDir = await mkdtemp(join(tmpdir(), 'veil-forgery-restart-cli-'));
    try {
      const file = join(cliDir, 'genuine.yaml');
      await writeFile(file, withProperty(configText, 'genuine'));
      await promisify(execFile)(join(ROOT, 'bin/veil'), ['config', 'publish', file, '--data-dir', cliDir], {
        env: { ...process.env, VEIL_MASTER_KEY: MASTER_KEY_HEX, ...storeEnv() },
      });
      for (const p of started.filter((s) => s.child.exitCode === null)) {
        await eventually('the genuine version run', async () => ((await protect(p, 'genuine')) === 200 ? true : undefined), 10_000);
        await onGenuineHistory(p);
      }
    } finally {
      await rm(cliDir, { recursive: true, force: true });
    }
  }, 120_000);
});
