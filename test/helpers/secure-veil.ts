import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { expect } from 'vitest';
import { EXAMPLE_CONFIG } from '../../src/env/index.ts';
import { openEngine } from '../../src/app/open-engine.ts';
import { JwtSigner } from '../../src/keystore/jwt-signer.ts';
import { ROOT } from './processes.ts';
import type { SecureBroker } from './secure-kafka.ts';

export const MASTER = 'e'.repeat(64);
export const BASE_URL = 'http://veil.secure.test';

/** A veil process of the tests, with everything it printed (for the secret grep) and its stdout alone (lines whole). */
export type VeilChild = ChildProcess & { output: () => string; stdout: () => string };

/** Every process a test file started: killed at its end, their output searched for secrets. */
export class Children {
  readonly all: VeilChild[] = [];

  spawn(args: string[], env: Record<string, string>): VeilChild {
    const child = spawn(join(ROOT, 'bin/veil'), args, {
      env: { ...process.env, VEIL_LOG_LEVEL: 'info', VEIL_MASTER_KEY: MASTER, VEIL_PROTECT_THREADS: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let stdout = '';
    child.stdout!.on('data', (d) => {
      out += String(d);
      stdout += String(d);
    });
    child.stderr!.on('data', (d) => (out += String(d)));
    const veil = Object.assign(child, { output: () => out, stdout: () => stdout });
    this.all.push(veil);
    return veil;
  }

  async killAll(): Promise<void> {
    await Promise.all(
      this.all
        .filter((c) => c.exitCode === null && c.signalCode === null)
        .map(
          (c) =>
            new Promise((r) => {
              c.once('exit', r);
              c.kill('SIGKILL');
            }),
        ),
    );
  }

  /** No output of any process holds one of the secrets (nor its base64, as a header or token would carry it). */
  expectNoSecret(secrets: string[]): void {
    expect(this.all.length).toBeGreaterThan(0);
    for (const secret of secrets) {
      for (const form of [secret, Buffer.from(secret).toString('base64')]) {
        for (const child of this.all) expect(child.output().includes(form), `a process printed a secret (pid ${child.pid})`).toBe(false);
      }
    }
  }
}

/** Resolves with the exit code once `child` exits (a signal counts as null), or rejects after `ms`. */
export function exited(child: ChildProcess, ms: number): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`process ${child.pid} did not exit within ${ms} ms`)), ms);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/**
 * A data dir with the example configuration's keys and a token signing key, made once and copied
 * for every process: processes that protect and unprotect with their own data dirs share the keys.
 */
export async function seedDataDir(configText: string): Promise<{ copy(): Promise<string>; configFile: string; token(roles: string[]): Promise<string> }> {
  const seed = await mkdtemp(join(tmpdir(), 'veil-secure-seed-'));
  const configFile = join(seed, 'config.yaml');
  await writeFile(configFile, `${await readFile(EXAMPLE_CONFIG, 'utf8')}\n${configText}`);
  const core = await openEngine({ configFile, dataDir: seed, env: { VEIL_MASTER_KEY: MASTER }, now: () => new Date(), provision: true });
  await core.keystore.create('veil-token-signing', 'jwt-es256');
  const signer = new JwtSigner(core.keystore, 'veil-token-signing');
  return {
    configFile,
    async copy() {
      const dir = join(tmpdir(), `veil-secure-${randomBytes(6).toString('hex')}`);
      await cp(seed, dir, { recursive: true });
      return dir;
    },
    async token(roles) {
      const iat = Math.floor(Date.now() / 1000);
      return signer.sign({ iss: BASE_URL, sub: 'secure-test', aud: 'veil', iat, exp: iat + 3600, roles }, 'at+jwt');
    },
  };
}

/** The harness's kafkajs client, on the broker's super-user listener. */
export const harness = (broker: SecureBroker) =>
  new Kafka({
    clientId: 'secure-harness',
    brokers: [broker.internal],
    logLevel: logLevel.NOTHING,
    retry: { retries: 30, initialRetryTime: 300, maxRetryTime: 3000 },
  });
