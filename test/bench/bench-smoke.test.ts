import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/processes.ts';

/**
 * Every bench in a short form (seconds, not minutes): it must finish, exit 0 and still print a
 * ratio against its baseline. Catches a bench that throws, hangs or stops reporting — the figures
 * themselves are the benches' business (npm run bench:*), never asserted here.
 */
const BENCHES: { name: string; env: Record<string, string>; timeoutMs: number }[] = [
  { name: 'engine', env: { BENCH_MS: '40' }, timeoutMs: 60_000 },
  { name: 'http', env: { BENCH_SECONDS: '1', BENCH_WARMUP_SECONDS: '1' }, timeoutMs: 90_000 },
  // the partition scaling in its short form: 4 and 8 partitions, not 32 and 128
  { name: 'stream', env: { BENCH_RECORDS: '2000', BENCH_SCALE_PARTITIONS: '4,8' }, timeoutMs: 240_000 },
  { name: 'store', env: { BENCH_VERSIONS: '20', BENCH_MS: '100' }, timeoutMs: 120_000 },
  { name: 'unprotect', env: { BENCH_SECONDS: '1' }, timeoutMs: 120_000 },
  { name: 'db', env: { BENCH_ROWS: '200', BENCH_RUNS: '1' }, timeoutMs: 120_000 },
  { name: 'gateway', env: { BENCH_CALLS: '100', BENCH_WARMUP: '1000', BENCH_COST_CALLS: '200' }, timeoutMs: 90_000 },
  { name: 'discover', env: { BENCH_RECORDS: '500' }, timeoutMs: 60_000 },
  { name: 'subjects', env: { BENCH_SUBJECTS: '2000', BENCH_OPS: '2000', BENCH_WINDOW_MS: '30' }, timeoutMs: 180_000 },
  { name: 'native', env: { BENCH_MS: '100' }, timeoutMs: 60_000 },
];

function runBench(name: string, env: Record<string, string>, timeoutMs: number): Promise<{ code: number | null; timedOut: boolean; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(join(ROOT, 'scripts/node22'), [join(ROOT, `bench/${name}.ts`)], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d) => (out += String(d)));
    child.stderr!.on('data', (d) => (out += String(d)));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, timedOut, out });
    });
  });
}

describe('benches run in their short form', () => {
  it('lists every bench of package.json', async () => {
    const { readFile } = await import('node:fs/promises');
    const scripts = Object.keys((JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts);
    expect(BENCHES.map((b) => `bench:${b.name}`).sort()).toEqual(scripts.filter((s) => s.startsWith('bench:')).sort());
  });

  it.each(BENCHES)(
    'npm run bench:$name finishes, exits 0 and prints a ratio',
    async ({ name, env, timeoutMs }) => {
      const { code, timedOut, out } = await runBench(name, env, timeoutMs);
      const tail = out.split('\n').slice(-15).join('\n');
      expect({ timedOut, code }, tail).toEqual({ timedOut: false, code: 0 });
      expect(out, tail).toMatch(/\d+\.\d\d×/);
      // bench:stream's formats table: each schema-registry format prints its own ratio
      if (name === 'stream')
        for (const format of ['json-schema', 'protobuf']) expect(out, tail).toMatch(new RegExp(`^${format} +[\\d,]+ +[\\d,]+ +\\d+\\.\\d\\d×`, 'm'));
      // and the Java baseline ran (javac, its JVM's warm-up and copy: ~4 s here): its target line
      // says met or not met — in the short form its ratio may be NaN, as the first records are untimed
      if (name === 'stream') expect(out, tail).toMatch(/^target: veil ≥ 0\.85× the tuned Java copy .*: (met|not met) /m);
      // the partition scaling: a row per partition count, with the librdkafka clients the process held
      if (name === 'stream') for (const p of [4, 8]) expect(out, tail).toMatch(new RegExp(`^${p} +\\d+ +\\d+ +\\d+ +[\\d,]+ +\\d+\\.\\d\\d×$`, 'm'));
      // bench:gateway's floor (a bare Node.js reverse proxy beside veil's) and its targets line
      if (name === 'gateway')
        expect(out, tail).toMatch(
          /^the floor: a bare Node\.js reverse proxy .* added -?\d+\.\d{3} ms at p50 .*\ntargets, 10 fields over direct: p50 ≤ \+0\.4 ms (met|not met) /m,
        );
    },
    300_000,
  );
});
