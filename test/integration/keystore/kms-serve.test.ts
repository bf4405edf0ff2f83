import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CreateKeyCommand, DescribeKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awsKmsEnv, startMoto, type Moto } from '../../helpers/moto.ts';
import { eventually, freePorts, ROOT } from '../../helpers/processes.ts';
import { pkcs11Env, softHsmToken, type SoftHsm } from '../../helpers/softhsm.ts';

/** `veil <args>` as a process with these settings: its exit code and output. */
async function veil(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(join(ROOT, 'bin/veil'), args, { env: { ...process.env, ...env }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const failed = e as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** An endpoint answering every AWS KMS call with one JSON error, as AWS does: its URL, how many calls it had. */
async function awsAnswering(status: number, body: { __type: string; message: string }): Promise<{ endpoint: string; calls(): number; close(): Promise<void> }> {
  let calls = 0;
  const server = createServer((req, res) => {
    calls++;
    req.resume();
    res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-errortype': body.__type });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { endpoint: `http://127.0.0.1:${port}`, calls: () => calls, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

function transformBody(action: 'Protect' | 'Unprotect', value: string) {
  return {
    rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: 'fraud' }] }],
    processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: action }] }],
    requests: [{ guid: guid(3), rightsContext: guid(1), processingContext: guid(2), instances: [{ className: 'Customer', propertyName: 'email', value }] }],
  };
}

/** `veil serve` as a process whose keys are wrapped by a KMS (VEIL_KMS), the KMS a real one. */
class Served {
  child!: ChildProcess;
  url = '';
  stderr = '';
  /** the process's log (pino, JSON lines) */
  stdout = '';
  token = '';

  async start(dataDir: string, env: Record<string, string>): Promise<void> {
    const port = await freePorts(1);
    this.url = `http://127.0.0.1:${port}`;
    this.stderr = '';
    this.stdout = '';
    this.child = spawn(join(ROOT, 'bin/veil'), ['serve', '--port', String(port), '--data-dir', dataDir], {
      env: { ...process.env, VEIL_LOG_LEVEL: 'warn', VEIL_DRAIN_DELAY_MS: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (d) => (this.stdout += String(d)));
    this.child.stderr!.on('data', (d) => (this.stderr += String(d)));
    await eventually('veil serve ready', async () => ((await fetch(`${this.url}/readyz`)).ok ? true : undefined));
    const secret = (await readFile(join(dataDir, 'dev-client.secret'), 'utf8')).trim();
    const res = await fetch(`${this.url}/connect/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: secret }),
    });
    this.token = ((await res.json()) as { access_token: string }).access_token;
  }

  async transform(action: 'Protect' | 'Unprotect', value: string): Promise<{ status: number; value?: string; code?: string }> {
    const res = await fetch(`${this.url}/transform`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(transformBody(action, value)),
    });
    const body = (await res.json()) as { responses?: { instances: { value: string }[] }[]; code?: string };
    return { status: res.status, value: body.responses?.[0]?.instances[0]?.value, code: body.code };
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    await exited;
  }
}

describe('veil serve with the KEK in a KMS (moto_server, SoftHSM2)', () => {
  let moto: Moto;
  let hsm: SoftHsm;
  let keyId: string;
  let dataDir: string;
  let backupDir: string;
  const served = new Served();

  beforeAll(async () => {
    moto = await startMoto();
    const admin = new KMSClient({ region: 'eu-west-1', endpoint: moto.endpoint, credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' } });
    keyId = (await admin.send(new CreateKeyCommand({}))).KeyMetadata!.KeyId!;
    admin.destroy();
    hsm = await softHsmToken('veil-serve');
    hsm.createAesKey('veil-kek');
    dataDir = await mkdtemp(join(tmpdir(), 'veil-kms-serve-'));
    backupDir = join(dataDir, 'backup');
    await mkdir(backupDir);
  }, 180_000);
  afterAll(async () => {
    await served.stop().catch(() => undefined);
    await moto?.stop();
    await hsm?.dispose();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const hsmEnv = (label = 'veil-kek') => pkcs11Env(hsm, label);
  const awsEnv = () => awsKmsEnv(moto.endpoint, keyId, 4);
  let protectedEmail = '';

  it('AWS KMS: keys wrapped by the KMS key (no master key anywhere); with the KMS unreachable it serves for the lifetime, then refuses with 503 KMS_UNAVAILABLE and red health, and recovers by itself', async () => {
    await served.start(dataDir, awsEnv());
    expect(existsSync(join(dataDir, 'master.key'))).toBe(false);
    const keystore = JSON.parse(await readFile(join(dataDir, 'keystore.json'), 'utf8')) as { format: string; kek: string };
    expect(keystore).toMatchObject({ format: 'veil-keyset', kek: `AWS KMS key ${keyId} at ${moto.endpoint}` });
    const protectedOut = await served.transform('Protect', 'ada@example.com');
    expect(protectedOut.status).toBe(200);
    protectedEmail = protectedOut.value!;
    expect(await served.transform('Unprotect', protectedEmail)).toMatchObject({ status: 200, value: 'ada@example.com' });

    moto.pause();
    const paused = Date.now();
    try {
      // still served right after the KMS went away
      expect((await served.transform('Protect', 'ada@example.com')).status).toBe(200);
      const refused = await eventually('calls refused', async () => {
        const r = await served.transform('Unprotect', protectedEmail);
        return r.status === 503 ? r : undefined;
      });
      expect(Date.now() - paused).toBeGreaterThanOrEqual(2_500);
      expect(refused.code).toBe('KMS_UNAVAILABLE');
      const health = await fetch(`${served.url}/healthz`);
      expect(health.status).toBe(503);
      const body = (await health.json()) as { status: string; kek: Record<string, string> };
      expect(body).toMatchObject({ status: 'failing', kek: { code: 'KMS_UNAVAILABLE' } });
      // which KMS and key stays in the log: /healthz is often open to anyone who can reach the port
      expect(JSON.stringify(body)).not.toContain(keyId);
      expect(JSON.stringify(await (await fetch(`${served.url}/healthz`)).json())).not.toContain('ada');
    } finally {
      moto.resume();
    }
    await eventually('recovered', async () => ((await fetch(`${served.url}/healthz`)).status === 200 ? true : undefined));
    expect(await served.transform('Unprotect', protectedEmail)).toMatchObject({ status: 200, value: 'ada@example.com' });
    // the KEK's loss, the keys refused and its return: each once, on the process's log, naming the key
    const kekLines = served.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; msg: string; kek?: string })
      .filter((l) => l.kek !== undefined && /key-encryption key/.test(l.msg));
    expect(kekLines.map((l) => l.level)).toEqual([40, 50, 40]);
    expect(kekLines[1]!.msg).toMatch(/keys are refused \(KMS_UNAVAILABLE\) until it answers/);
    expect(kekLines[2]!.msg).toMatch(/answers again/);
    expect(new Set(kekLines.map((l) => l.kek))).toEqual(new Set([`AWS KMS key ${keyId} at ${moto.endpoint}`]));
    // the KMS's calls on /metrics (meteredKms): the unwraps that answered and the ones that did not, no key named
    const metrics = await (await fetch(`${served.url}/metrics`)).text();
    const count = (outcome: string) => Number(new RegExp(`^veil_kms_calls_total\\{op="unwrap",outcome="${outcome}"\\} (\\d+)`, 'm').exec(metrics)?.[1] ?? 0);
    expect(count('ok')).toBeGreaterThanOrEqual(2);
    expect(count('KMS_UNAVAILABLE')).toBeGreaterThanOrEqual(1);
    expect(metrics).toMatch(/^veil_kms_call_seconds_count\{op="unwrap"\} \d+/m);
    expect(metrics).not.toContain(keyId);
    await served.stop();
  }, 120_000);

  it('veil keys rewrap moves the KEK from AWS KMS to an HSM (PKCS#11): the values protected before still unprotect, no key changed', async () => {
    const to = Object.fromEntries(Object.entries(hsmEnv()).map(([k, v]) => [k.startsWith('VEIL_') ? k.replace(/^VEIL_/, 'VEIL_TO_') : k, v]));
    // destroying the KEK that still wraps the data dir's key set would lose every key: refused
    const early = await veil(['keys', 'destroy-kek', '--data-dir', dataDir], awsEnv());
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(/still wrapped by AWS KMS key .*: run veil keys rewrap to the new KEK first/);
    // a backup of the data dir as it is: the key set wrapped by the AWS KMS key
    await copyFile(join(dataDir, 'keystore.json'), join(backupDir, 'keystore.json'));
    const { stdout } = await promisify(execFile)(join(ROOT, 'bin/veil'), ['keys', 'rewrap', '--data-dir', dataDir], {
      env: { ...process.env, ...awsEnv(), ...to },
    });
    expect(stdout).toMatch(/rewrapped .*keystore\.json: from AWS KMS key .* to PKCS#11 token veil-serve, key veil-kek; no key changed/);
    expect(JSON.parse(await readFile(join(dataDir, 'keystore.json'), 'utf8')).kek).toBe('PKCS#11 token veil-serve, key veil-kek');
    await served.start(dataDir, hsmEnv());
    expect(await served.transform('Unprotect', protectedEmail)).toMatchObject({ status: 200, value: 'ada@example.com' });
    expect(served.stderr).not.toContain(hsm.pin);
    expect(served.stdout).not.toContain(hsm.pin);
    await served.stop();
    // the AWS KMS key no longer opens it
    const again = await promisify(execFile)(join(ROOT, 'bin/veil'), ['keys', 'list', '--data-dir', dataDir], { env: { ...process.env, ...awsEnv() } }).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect((again as { code: number }).code).toBe(1);
  }, 120_000);

  it("shredding backups: veil keys destroy-kek schedules the old AWS KMS key's deletion, the backup it wrapped opens nothing, the data dir serves on", async () => {
    expect((await veil(['keys', 'list', '--data-dir', backupDir], awsEnv())).code).toBe(0); // the backup opens while the key lives
    const destroyed = await veil(['keys', 'destroy-kek', '--data-dir', dataDir, '--pending-days', '7'], awsEnv());
    expect(destroyed.code, destroyed.stderr).toBe(0);
    expect(destroyed.stdout).toMatch(new RegExp(`AWS KMS key ${keyId} scheduled for deletion on \\d{4}-\\d\\d-\\d\\dT.*: unusable from now`));
    const admin = new KMSClient({ region: 'eu-west-1', endpoint: moto.endpoint, credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' } });
    const meta = (await admin.send(new DescribeKeyCommand({ KeyId: keyId }))).KeyMetadata!;
    admin.destroy();
    expect(meta.KeyState).toBe('PendingDeletion');
    expect(meta.DeletionDate!.getTime() - Date.now()).toBeGreaterThan(6.9 * 86_400_000);
    // AWS refuses every use of a key pending deletion (KMSInvalidStateException); moto_server 5.2.5
    // still decrypts under it (its decrypt does not look at the key state), so AWS's documented
    // answer comes from a stand-in endpoint: the backup's key set is then refused, not retried
    const stand = await awsAnswering(400, { __type: 'KMSInvalidStateException', message: `${keyId} is pending deletion.` });
    try {
      const restored = await veil(['keys', 'list', '--data-dir', backupDir], { ...awsEnv(), VEIL_KMS_ENDPOINT: stand.endpoint });
      expect(restored.code).toBe(1);
      expect(restored.stderr).toMatch(/KMSInvalidStateException.*\[KMS_REFUSED\]|\[KMS_REFUSED\].*KMSInvalidStateException/s);
      expect(stand.calls()).toBe(1); // refused at once: no retry of what cannot change
    } finally {
      await stand.close();
    }
    await served.start(dataDir, hsmEnv());
    expect(await served.transform('Unprotect', protectedEmail)).toMatchObject({ status: 200, value: 'ada@example.com' });
    await served.stop();
  }, 120_000);

  it('shredding backups on an HSM: rewrap to a new PKCS#11 key, destroy-kek destroys the old key object, the backup opens nothing', async () => {
    hsm.createAesKey('veil-kek-next');
    await copyFile(join(dataDir, 'keystore.json'), join(backupDir, 'keystore.json'));
    const next = {
      VEIL_TO_KMS: 'pkcs11',
      VEIL_TO_PKCS11_MODULE: hsm.library,
      VEIL_TO_PKCS11_TOKEN: hsm.tokenLabel,
      VEIL_TO_PKCS11_PIN: hsm.pin,
      VEIL_TO_PKCS11_KEY_LABEL: 'veil-kek-next',
    };
    expect((await veil(['keys', 'rewrap', '--data-dir', dataDir], { ...hsmEnv(), ...next })).code).toBe(0);
    const destroyed = await veil(['keys', 'destroy-kek', '--data-dir', dataDir], hsmEnv());
    expect(destroyed.code, destroyed.stderr).toBe(0);
    expect(destroyed.stdout.trim()).toBe('PKCS#11 token veil-serve: key veil-kek destroyed');
    const restored = await veil(['keys', 'list', '--data-dir', backupDir], hsmEnv());
    expect(restored.code).toBe(1);
    expect(restored.stderr + restored.stdout).not.toContain(hsm.pin);
    await served.start(dataDir, hsmEnv('veil-kek-next'));
    expect(await served.transform('Unprotect', protectedEmail)).toMatchObject({ status: 200, value: 'ada@example.com' });
    await served.stop();
  }, 120_000);
});
