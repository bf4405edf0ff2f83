import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROKERS, kafkaClient } from '../../helpers/kafka.ts';
import { MASTER_KEY_HEX } from '../../helpers/http-service.ts';
import { eventually, ROOT } from '../../helpers/processes.ts';
import { EXAMPLE_CONFIG_TEXT } from '../../helpers/engine-fixture.ts';
import { startVeilServe, type VeilProcess } from '../../helpers/veil-process.ts';

const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const withProperty = (text: string, name: string) =>
  text.replace(
    '      segmentKey: { protect: name-pseudonym, unprotect: none }',
    `      segmentKey: { protect: name-pseudonym, unprotect: none }\n      ${name}: { protect: name-randomized }`,
  );

/**
 * An attacker who can write to the control-store topic but does not hold the key set: a
 * well-formed version of theirs, a genuine version replayed on a newer head, and a record that is
 * not a write at all. `veil serve` runs none of them, says so in its log, and keeps serving the
 * version it runs; the next genuine publish (the portal's, through the same topic) runs.
 */
describe('the control-store topic as an attacker writes to it', () => {
  const topic = `veil.control.forgery.${randomBytes(4).toString('hex')}`;
  const kafka = kafkaClient('forger');
  const producer = kafka.producer();
  const records: Record<string, unknown>[] = [];
  const reader = kafka.consumer({ groupId: `forger-${randomBytes(4).toString('hex')}` });
  let veil: VeilProcess;
  let token = '';

  const protectWith = async (process: VeilProcess, bearer: string, property: string, value = 'x') => {
    const body = {
      rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: 'fraud' }] }],
      processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: 'Protect' }] }],
      requests: [{ guid: guid(3), rightsContext: guid(1), processingContext: guid(2), instances: [{ className: 'Customer', propertyName: property, value }] }],
    };
    const answer = await process.request('/transform', {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return {
      status: answer.status,
      value:
        answer.status === 200 ? (JSON.parse(answer.text) as { responses: { instances: { value: string }[] }[] }).responses[0]!.instances[0]!.value : undefined,
    };
  };
  const protect = async (property: string) => (await protectWith(veil, token, property)).status;
  const tokenOf = async (process: VeilProcess) => {
    const secret = (await readFile(join(process.dataDir, 'dev-client.secret'), 'utf8')).trim();
    const answer = await process.request('/connect/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: secret }).toString(),
    });
    return (JSON.parse(answer.text) as { access_token: string }).access_token;
  };
  const storeEnv = () => ({ VEIL_CONTROL_STORE: 'kafka', VEIL_CONTROL_TOPIC: topic, KAFKA_BROKERS: BROKERS.join(',') });
  const head = () => Math.max(0, ...records.filter((r) => r.history === 'config').map((r) => (r.basedOn as number) + 1));
  const write = (value: unknown) =>
    producer.send({ topic, messages: [{ key: `config:${randomBytes(6).toString('hex')}`, value: typeof value === 'string' ? value : JSON.stringify(value) }] });

  beforeAll(async () => {
    veil = await startVeilServe({ configText: EXAMPLE_CONFIG_TEXT, env: storeEnv() });
    token = await tokenOf(veil);
    await producer.connect();
    await reader.connect();
    await reader.subscribe({ topic, fromBeginning: true });
    await reader.run({
      eachMessage: async ({ message }) => {
        if (!message.value) return;
        try {
          records.push(JSON.parse(message.value.toString()) as Record<string, unknown>);
        } catch {
          /* not a write */
        }
      },
    });
    await eventually('the adopted version read', async () => (records.some((r) => r.history === 'config' && r.auth) ? true : undefined));
  }, 120_000);
  afterAll(async () => {
    await producer.disconnect();
    await reader.disconnect();
    await veil?.stop();
  });

  it('runs no forged version, no replayed one and no garbage; keeps serving, and the next genuine publish runs', async () => {
    expect(await protect('email')).toBe(200);
    expect(await protect('forged')).toBe(422);
    // well-formed, based on the head, with a made-up MAC: it grants a new property
    await write({
      v: 1,
      history: 'config',
      basedOn: head(),
      writer: 'mallory',
      at: new Date().toISOString(),
      body: withProperty(EXAMPLE_CONFIG_TEXT, 'forged'),
      meta: { by: 'admin', source: 'portal', note: 'routine' },
      auth: { key: 1, mac: randomBytes(32).toString('base64url') },
    });
    await eventually('the forgery read', async () => (records.some((r) => r.writer === 'mallory') ? true : undefined));
    // the genuine adopted version, replayed on the newer head
    const genuine = records.find((r) => r.history === 'config' && r.auth)!;
    const replayedOn = head();
    await write({ ...genuine, basedOn: replayedOn });
    // not a write at all
    await write('{"v":1,"history":"config","basedOn":');
    await write(Buffer.alloc(64, 0xff).toString('latin1'));
    // one more forgery after them: once the process says it refused that one, it has read all of the above
    await eventually('the replay read', async () => (records.some((r) => r.history === 'config' && r.basedOn === replayedOn) ? true : undefined));
    const last = head() + 1;
    await write({
      v: 1,
      history: 'config',
      basedOn: last - 1,
      writer: 'mallory-last',
      at: new Date().toISOString(),
      body: withProperty(EXAMPLE_CONFIG_TEXT, 'forged'),
      meta: { by: 'admin', source: 'portal', note: 'routine' },
      auth: { key: 1, mac: randomBytes(32).toString('base64url') },
    });
    await eventually(
      'the last forgery refused',
      async () => (veil.output().includes(`configuration version ${last} of the control store is not authenticated`) ? true : undefined),
      20_000,
    );
    expect(await protect('forged')).toBe(422);
    expect(await protect('email')).toBe(200);
    expect(veil.output()).toMatch(/not authenticated by the key set/);
    expect((await veil.request('/healthz')).status).toBe(200);

    // a genuine publish through the topic (the command line's, signed with the key set) runs
    const cliDir = await mkdtemp(join(tmpdir(), 'veil-forgery-cli-'));
    try {
      const file = join(cliDir, 'genuine.yaml');
      await writeFile(file, withProperty(EXAMPLE_CONFIG_TEXT, 'genuine'));
      await promisify(execFile)(join(ROOT, 'bin/veil'), ['config', 'publish', file, '--data-dir', cliDir], {
        env: { ...process.env, VEIL_MASTER_KEY: MASTER_KEY_HEX, VEIL_CONTROL_STORE: 'kafka', VEIL_CONTROL_TOPIC: topic, KAFKA_BROKERS: BROKERS.join(',') },
      });
      await eventually('the genuine version run', async () => ((await protect('genuine')) === 200 ? true : undefined), 10_000);
      expect(await protect('forged')).toBe(422);
    } finally {
      await rm(cliDir, { recursive: true, force: true });
    }
  }, 90_000);
  it('a forged key set on the topic is not used: the running process keeps its keys, a process started afterwards opens the genuine key set, and a key change made then supersedes the forgery', async () => {
    const keysets = () => records.filter((r) => r.history === 'keyset');
    const keysetHead = () => Math.max(0, ...keysets().map((r) => (r.basedOn as number) + 1));
    const before = await protectWith(veil, token, 'email', 'ada@example.com');
    expect(before.status).toBe(200);
    // a well-formed key set (the genuine one's shape, its ciphertext made up) with a made-up MAC, based on the head
    const genuine = JSON.parse(Buffer.from(keysets().at(-1)!.body as string, 'base64').toString()) as Record<string, unknown>;
    const forgedDocument = `${JSON.stringify({ ...genuine, ciphertext: randomBytes(400).toString('base64') }, null, 2)}\n`;
    await write({
      v: 1,
      history: 'keyset',
      basedOn: keysetHead(),
      writer: 'mallory-keys',
      at: new Date().toISOString(),
      body: Buffer.from(forgedDocument).toString('base64'),
      auth: { key: 1, mac: randomBytes(32).toString('base64url') },
    });
    await eventually('the forged key set read', async () => (records.some((r) => r.writer === 'mallory-keys') ? true : undefined));
    await eventually(
      'the forgery reported',
      async () => (/does not open under this process's KEK and carries no valid MAC/.test(veil.output()) ? true : undefined),
      10_000,
    );
    expect(await protectWith(veil, token, 'email', 'ada@example.com')).toEqual(before);
    expect((await veil.request('/healthz')).status).toBe(200);

    // a process started now (its own data dir) opens the genuine key set: it protects as the first does
    const second = await startVeilServe({ configText: EXAMPLE_CONFIG_TEXT, env: storeEnv() });
    try {
      expect(await protectWith(second, await tokenOf(second), 'email', 'ada@example.com')).toEqual(before);
      expect(second.output()).toMatch(/does not open under this process's KEK and carries no valid MAC/);
    } finally {
      await second.stop();
    }

    // a key change is based on the head and supersedes the forgery: every process reads it
    const cliDir = await mkdtemp(join(tmpdir(), 'veil-forgery-keys-'));
    try {
      const run = (args: string[]) =>
        promisify(execFile)(join(ROOT, 'bin/veil'), [...args, '--data-dir', cliDir], {
          env: { ...process.env, VEIL_MASTER_KEY: MASTER_KEY_HEX, ...storeEnv() },
        });
      expect((await run(['keys', 'create', '--id', 'after-forgery', '--type', 'aes-gcm'])).stdout).toMatch(/created key after-forgery/);
      // based on the forgery's number: the history goes on past it
      const forgedNumber = (records.find((r) => r.writer === 'mallory-keys')!.basedOn as number) + 1;
      await eventually('the new key set read', async () => (keysets().some((r) => r.basedOn === forgedNumber) ? true : undefined));
      expect(await protectWith(veil, token, 'email', 'ada@example.com')).toEqual(before);
    } finally {
      await rm(cliDir, { recursive: true, force: true });
    }
  }, 120_000);
});
