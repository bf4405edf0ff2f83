import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROKERS } from '../../helpers/kafka.ts';
import { awsKmsEnv, createKmsKey, startMoto, type Moto } from '../../helpers/moto.ts';
import { eventually, freePorts, ROOT } from '../../helpers/processes.ts';

const exec = promisify(execFile);
const EXAMPLE = join(ROOT, 'config/example.yaml');
const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const withProperty = (text: string, name: string) =>
  text.replace(
    '      segmentKey: { protect: name-pseudonym, unprotect: none }',
    `      segmentKey: { protect: name-pseudonym, unprotect: none }\n      ${name}: { protect: name-randomized }`,
  );

/** One `veil serve` with a data dir of its own. */
class Serve {
  child!: ChildProcess;
  url = '';
  token = '';
  log = '';
  readonly dataDir: string;
  constructor(dataDir: string) {
    this.dataDir = dataDir;
  }

  async start(env: Record<string, string>): Promise<void> {
    const port = await freePorts(1);
    this.url = `http://127.0.0.1:${port}`;
    this.child = spawn(join(ROOT, 'bin/veil'), ['serve', '--port', String(port), '--data-dir', this.dataDir, '--config', EXAMPLE], {
      env: { ...process.env, VEIL_LOG_LEVEL: 'info', VEIL_DRAIN_DELAY_MS: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (d) => (this.log += String(d)));
    this.child.stderr!.on('data', (d) => (this.log += String(d)));
    await eventually(`serve on ${this.dataDir}`, async () => ((await fetch(`${this.url}/readyz`)).ok ? true : undefined), 60_000);
    const secret = (await readFile(join(this.dataDir, 'dev-client.secret'), 'utf8')).trim();
    const res = await fetch(`${this.url}/connect/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: secret }),
    });
    this.token = ((await res.json()) as { access_token: string }).access_token;
  }

  async transform(action: 'Protect' | 'Unprotect', property: string, value: string): Promise<{ status: number; value?: string }> {
    const body = {
      rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: 'fraud' }] }],
      processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: action }] }],
      requests: [{ guid: guid(3), rightsContext: guid(1), processingContext: guid(2), instances: [{ className: 'Customer', propertyName: property, value }] }],
    };
    const res = await fetch(`${this.url}/transform`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const out = (await res.json()) as { responses?: { instances: { value: string }[] }[] };
    return { status: res.status, value: out.responses?.[0]?.instances[0]?.value };
  }

  async stop(): Promise<void> {
    if (!this.child || this.child.exitCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    await exited;
  }
}

/**
 * Two `veil serve` processes with separate data dirs that share only the Kafka control store
 * (one compacted topic) and an AWS KMS key (moto_server); a third data dir is used by the
 * command line. Keys, key rotations and configuration versions written by any of them are
 * served by all; publishes racing each other leave every process on the same active version.
 */
describe('many hosts, one truth: processes sharing the Kafka control store and a KMS', () => {
  let moto: Moto;
  let env: Record<string, string>;
  const dirs: string[] = [];
  const serves: Serve[] = [];
  let cliDir: string;
  const cli = (...args: string[]) => exec(join(ROOT, 'bin/veil'), [...args, '--data-dir', cliDir], { env: { ...process.env, ...env } });

  beforeAll(async () => {
    moto = await startMoto();
    env = {
      VEIL_CONTROL_STORE: 'kafka',
      VEIL_CONTROL_TOPIC: `veil.control.procs.${randomBytes(4).toString('hex')}`,
      KAFKA_BROKERS: BROKERS.join(','),
      ...awsKmsEnv(moto.endpoint, await createKmsKey(moto.endpoint)),
    };
    for (let i = 0; i < 3; i++) dirs.push(await mkdtemp(join(tmpdir(), `veil-host${i}-`)));
    cliDir = dirs[2]!;
    for (const dir of dirs.slice(0, 2)) {
      const s = new Serve(dir);
      await s.start(env);
      serves.push(s);
    }
  }, 240_000);
  afterAll(async () => {
    await Promise.all(serves.map((s) => s.stop()));
    await moto?.stop();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('a value protected by either host is unprotected by the other: one key set, read from the topic', async () => {
    const [a, b] = serves as [Serve, Serve];
    const email = await a.transform('Protect', 'email', 'ada@example.com');
    expect(email.status).toBe(200);
    expect(await b.transform('Unprotect', 'email', email.value!)).toMatchObject({ status: 200, value: 'ada@example.com' });
    // deterministic: the same key on both
    expect((await b.transform('Protect', 'email', 'ada@example.com')).value).toBe(email.value);
    const name = await b.transform('Protect', 'name', 'Ada Lovelace');
    expect(await a.transform('Unprotect', 'name', name.value!)).toMatchObject({ status: 200, value: 'Ada Lovelace' });
    expect(JSON.parse(await readFile(join(b.dataDir, 'keystore.json'), 'utf8')).format).toBe('veil-keyset');
  });

  it('a key rotated from a third data dir is used by both hosts, and what either protects with it the other reads', async () => {
    const [a, b] = serves as [Serve, Serve];
    const before = await a.transform('Protect', 'name', 'Grace Hopper');
    const { stdout } = await cli('keys', 'rotate', '--id', 'customer-gcm');
    expect(stdout).toMatch(/version 2 is primary/);
    // the key version a protected AES-GCM value names: byte 1..4 of its bytes (output-format.ts)
    const versionOf = (value: string) => Buffer.from(value, 'base64url').readUInt32BE(1);
    expect(versionOf(before.value!)).toBe(1);
    const rotated = Date.now();
    for (const s of serves)
      await eventually(
        `${s.dataDir} protecting with customer-gcm v2`,
        async () => (versionOf((await s.transform('Protect', 'name', 'x')).value!) === 2 ? true : undefined),
        10_000,
      );
    expect(Date.now() - rotated).toBeLessThan(2_000);
    const [onA, onB] = [await a.transform('Protect', 'name', 'Grace Hopper'), await b.transform('Protect', 'name', 'Grace Hopper')];
    expect(await b.transform('Unprotect', 'name', onA.value!)).toMatchObject({ status: 200, value: 'Grace Hopper' });
    expect(await a.transform('Unprotect', 'name', onB.value!)).toMatchObject({ status: 200, value: 'Grace Hopper' });
    expect(await b.transform('Unprotect', 'name', before.value!)).toMatchObject({ status: 200, value: 'Grace Hopper' });
  }, 60_000);

  it('a version published from the command line is served by both hosts within 2 s; two racing publishes leave both on the same active version', async () => {
    const [a] = serves as [Serve, Serve];
    const base = await readFile(EXAMPLE, 'utf8');
    const file = (name: string) => join(cliDir, `${name}.yaml`);
    await writeFile(file('nickname'), withProperty(base, 'nickname'));
    expect((await a.transform('Protect', 'nickname', 'Ada')).status).toBe(422);
    await cli('config', 'publish', file('nickname'));
    // from the moment the publish was accepted (the command returns after reading it back)
    const published = Date.now();
    for (const s of serves)
      await eventually(
        `${s.dataDir} serving nickname`,
        async () => ((await s.transform('Protect', 'nickname', 'Ada')).status === 200 ? true : undefined),
        10_000,
      );
    expect(Date.now() - published).toBeLessThan(2_000);

    await writeFile(file('alias1'), withProperty(base, 'alias1'));
    await writeFile(file('alias2'), withProperty(base, 'alias2'));
    const results = await Promise.all([cli('config', 'publish', file('alias1')), cli('config', 'publish', file('alias2'))]);
    const numbers = results.map((r) => Number(/as version (\d+)/.exec(r.stdout)![1]));
    expect(new Set(numbers).size).toBe(2);
    const winner = numbers[0]! > numbers[1]! ? 'alias1' : 'alias2';
    const loser = winner === 'alias1' ? 'alias2' : 'alias1';
    for (const s of serves) {
      await eventually(`${s.dataDir} on the last version`, async () => ((await s.transform('Protect', winner, 'x')).status === 200 ? true : undefined), 10_000);
      expect((await s.transform('Protect', loser, 'x')).status).toBe(422);
      expect((await s.transform('Protect', 'nickname', 'x')).status).toBe(422);
    }
  }, 90_000);
});
