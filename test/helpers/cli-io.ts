import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { CliIo } from '../../src/cli/io.ts';
import { main } from '../../src/cli/main.ts';

export const FIXED_NOW = new Date('2025-03-04T05:06:07.000Z');

const dirs: string[] = [];

/** A fresh temp directory, removed after the test. */
export async function tempDir(prefix = 'veil-cli-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A random master key as VEIL_MASTER_KEY takes it: 64 hex digits. */
export function masterKeyHex(): string {
  return randomBytes(32).toString('hex');
}

/** A CliIo that collects output in memory; stdin is whatever `stdin` holds when read. */
export interface FakeCliIo extends CliIo {
  out: string[];
  err: string[];
  stdin: string;
  env: Record<string, string | undefined>;
}

export function fakeCliIo(cwd: string, env: Record<string, string | undefined> = {}): FakeCliIo {
  const io: FakeCliIo = {
    out: [],
    err: [],
    stdin: '',
    stdout: (text) => void io.out.push(text),
    stderr: (text) => void io.err.push(text),
    readStdin: async () => io.stdin,
    env,
    cwd,
    now: () => FIXED_NOW,
  };
  return io;
}

export interface CliRun {
  code: number;
  out: string;
  err: string;
}

/** Runs `veil <argv>` in-process; `stdin` (if given) is what the command reads. */
export async function veil(io: FakeCliIo, argv: string[], stdin?: string): Promise<CliRun> {
  io.out.length = 0;
  io.err.length = 0;
  if (stdin !== undefined) io.stdin = stdin;
  const code = await main(argv, io);
  return { code, out: io.out.join(''), err: io.err.join('') };
}
