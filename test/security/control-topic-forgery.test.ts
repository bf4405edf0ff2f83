import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROKERS, kafkaClient } from '../helpers/kafka.ts';
import { MASTER_KEY_HEX } from '../helpers/http-service.ts';
import { eventually, ROOT } from '../helpers/processes.ts';
import { EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';
import { startVeilServe, type VeilProcess } from '../helpers/veil-process.ts';

const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const withProperty = (text: string, name: string) => text.replace('      segmentKey: { protect: name-pseudonym, unprotect: none }', `      segmentKey: { protect: name-pseudonym, unprotect: none }\n      ${name}: { protect: name-randomized }`);

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

  const protect = async (property: string) => {
    const body = {
      rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: 'fraud' }] }],
      processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: 'Protect' }] }],
      requests: [{ guid: guid(3), rightsContext: guid(1), processingContext: guid(2), instances: [{ className: 'Customer', propertyName: property, value: 'x' }] }],
    };
    return (await veil.request('/transform', { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })).status;
  };
  const head = () => Math.max(0, ...records.filter((r) => r.history === 'config').map((r) => (r.basedOn as number) + 1));
  const write = (value: unknown) => producer.send({ topic, messages: [{ key: `config:${randomBytes(6).toString('hex')}`, value: typeof value === 'string' ? value : JSON.stringify(value) }] });

  beforeAll(async () => {
    veil = await startVeilServe({ configText: EXAMPLE_CONFIG_TEXT, env: { VEIL_CONTROL_STORE: 'kafka', VEIL_CONTROL_TOPIC: topic, KAFKA_BROKERS: BROKERS.join(',') } });
    const secret = (await readFile(join(veil.dataDir, 'dev-client.secret'), 'utf8')).trim();
    const answer = await veil.request('/connect/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: secret }).toString() });
    token = (JSON.parse(answer.text) as { access_token: string }).access_token;
    await producer.connect();
    await reader.connect();
    await reader.subscribe({ topic, fromBeginning: true });
    await reader.run({ eachMessage: async ({ message }) => {
      if (!message.value) return;
      try {
        records.push(JSON.parse(message.value.toString()) as Record<string, unknown>);
      } catch { /* not a write */ }
    } });
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
    await write({ v: 1, history: 'config', basedOn: head(), writer: 'mallory', at: new Date().toISOString(), body: withProperty(EXAMPLE_CONFIG_TEXT, 'forged'), meta: { by: 'admin', source: 'portal', note: 'routine' }, auth: { key: 1, mac: randomBytes(32).toString('base64url') } });
    await eventually('the forgery read', async () => (records.some((r) => r.writer === 'mallory') ? true : undefined));
    // the genuine adopted version, replayed on the newer head
    const genuine = records.find((r) => r.history === 'config' && r.auth)!;
    await write({ ...genuine, basedOn: head() });
    // not a write at all
    await write('{"v":1,"history":"config","basedOn":');
    await write(Buffer.alloc(64, 0xff).toString('latin1'));
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await protect('forged')).toBe(422);
    expect(await protect('email')).toBe(200);
    expect(veil.output()).toMatch(/not authenticated by the key set/);
    expect((await veil.request('/healthz')).status).toBe(200);

    // a genuine publish through the topic (the command line's, signed with the key set) runs
    const cliDir = await mkdtemp(join(tmpdir(), 'veil-forgery-cli-'));
    try {
      const file = join(cliDir, 'genuine.yaml');
      await writeFile(file, withProperty(EXAMPLE_CONFIG_TEXT, 'genuine'));
      await promisify(execFile)(join(ROOT, 'bin/veil'), ['config', 'publish', file, '--data-dir', cliDir], { env: { ...process.env, VEIL_MASTER_KEY: MASTER_KEY_HEX, VEIL_CONTROL_STORE: 'kafka', VEIL_CONTROL_TOPIC: topic, KAFKA_BROKERS: BROKERS.join(',') } });
      await eventually('the genuine version run', async () => ((await protect('genuine')) === 200 ? true : undefined), 10_000);
      expect(await protect('forged')).toBe(422);
    } finally {
      await rm(cliDir, { recursive: true, force: true });
    }
  }, 90_000);
});
