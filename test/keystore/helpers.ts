import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { CliIo } from '../../src/cli/io.ts';
import { SecretKey, VeilError } from '../../src/engine/index.ts';
import { type ErrorCode } from '../../src/errors/catalog.ts';

export const FIXED_NOW = new Date('2025-03-04T05:06:07.000Z');

const dirs: string[] = [];

/** A fresh temp directory, removed after the test. */
export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'veil-keys-'));
  dirs.push(dir);
  return dir;
}

afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

export function randomMasterKey(): SecretKey {
  return SecretKey.fromBytes(randomBytes(32));
}

/** Runs `fn` and returns the VeilError it throws (fails the test for anything else). */
export async function veilError(fn: () => Promise<unknown> | unknown, code: ErrorCode): Promise<VeilError> {
  let caught: unknown;
  try {
    await fn();
  } catch (error) {
    caught = error;
  }
  if (!(caught instanceof VeilError)) {
    throw new Error(`expected VeilError ${code}, got ${caught === undefined ? 'no error' : String(caught)}`);
  }
  if (caught.code !== code) throw new Error(`expected ${code}, got ${caught.code}: ${caught.message}`);
  return caught;
}

export interface FakeIo extends CliIo {
  out: string[];
  err: string[];
  stdin: string;
}

export function fakeIo(cwd: string, env: Record<string, string | undefined> = {}): FakeIo {
  const io: FakeIo = {
    out: [],
    err: [],
    stdin: '',
    stdout: (text) => io.out.push(text),
    stderr: (text) => io.err.push(text),
    readStdin: async () => io.stdin,
    env,
    cwd,
    now: () => FIXED_NOW,
  };
  return io;
}
