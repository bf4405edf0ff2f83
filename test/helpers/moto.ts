import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { CreateKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { pythonVenv } from './python-venv.ts';

export interface Moto {
  endpoint: string;
  process: ChildProcess;
  /** SIGSTOP / SIGCONT: an unreachable KMS (calls time out) that comes back with its state */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** Starts moto_server (from a venv under ~/.cache/veil, built once from PyPI) and waits until it answers. */
export async function startMoto(): Promise<Moto> {
  const venv = await pythonVenv('moto');
  const port = await freePort();
  const child = spawn(join(venv, 'bin/python'), ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr = (stderr + String(d)).slice(-4000)));
  const endpoint = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 60_000; ;) {
    if (child.exitCode !== null) throw new Error(`moto_server exited: ${stderr}`);
    if (
      await fetch(`${endpoint}/moto-api/`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) throw new Error(`moto_server did not answer on ${endpoint}: ${stderr}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    endpoint,
    process: child,
    pause: () => void child.kill('SIGSTOP'),
    resume: () => void child.kill('SIGCONT'),
    async stop() {
      child.kill('SIGCONT');
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
    },
  };
}

/** A new key in moto's AWS KMS (region eu-west-1, moto's test credentials): its id. */
export async function createKmsKey(endpoint: string): Promise<string> {
  const admin = new KMSClient({ region: 'eu-west-1', endpoint, credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' } });
  try {
    return (await admin.send(new CreateKeyCommand({}))).KeyMetadata!.KeyId!;
  } finally {
    admin.destroy();
  }
}

/**
 * the environment that points a veil process's AWS KMS adapter at moto's key `keyId`, with moto's
 * test credentials; without `ttlSeconds`, the adapter's default time to live
 */
export function awsKmsEnv(endpoint: string, keyId: string, ttlSeconds?: number): Record<string, string> {
  return {
    AWS_ACCESS_KEY_ID: 'testing',
    AWS_SECRET_ACCESS_KEY: 'testing',
    VEIL_KMS: 'aws-kms',
    VEIL_KMS_KEY_ID: keyId,
    VEIL_KMS_REGION: 'eu-west-1',
    VEIL_KMS_ENDPOINT: endpoint,
    ...(ttlSeconds === undefined ? {} : { VEIL_KMS_TTL_SECONDS: String(ttlSeconds) }),
  };
}
