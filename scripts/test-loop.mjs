#!/usr/bin/env node
// Runs one test file N times and prints a tally per test (per stream client, where the test runs
// once per client): `npm run test:aborted-loop [-- N]` (default 20). The output of a failed run
// is kept in test-artifacts/ for reading.
//   node scripts/test-loop.mjs <test file> [runs]
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const [file, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? process.env.VEIL_LOOP_RUNS ?? 20);
if (!file || !Number.isInteger(runs) || runs < 1) {
  console.error('usage: node scripts/test-loop.mjs <test file> [runs]');
  process.exit(2);
}

const report = join(tmpdir(), `veil-loop-${process.pid}.json`);
const tally = new Map();
const started = Date.now();
for (let run = 1; run <= runs; run++) {
  rmSync(report, { force: true });
  const t0 = Date.now();
  const res = spawnSync(join(root, 'scripts/node22'), [join(root, 'node_modules/vitest/vitest.mjs'), 'run', file, '--reporter=default', '--reporter=json', `--outputFile.json=${report}`],
    { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  let results = [];
  try {
    results = JSON.parse(readFileSync(report, 'utf8')).testResults.flatMap((f) => f.assertionResults);
  } catch {
    // no report: the run failed before its tests (counted below)
  }
  if (results.length === 0) results = [{ title: '(the run itself)', status: 'failed' }];
  // the tests' own one-line summaries (the aborted-input test prints its counts)
  const summary = res.stdout.match(/aborted input \(.*$/gm) ?? [];
  for (const r of results) {
    const entry = tally.get(r.title) ?? { passed: 0, failed: 0 };
    entry[r.status === 'passed' ? 'passed' : 'failed']++;
    tally.set(r.title, entry);
  }
  const failed = results.filter((r) => r.status !== 'passed').length;
  console.log(`run ${run}/${runs}: ${failed ? `FAILED (${failed})` : 'passed'} in ${((Date.now() - t0) / 1000).toFixed(1)} s${summary.length ? `\n  ${summary.join('\n  ')}` : ''}`);
  if (failed || res.status !== 0) {
    mkdirSync(join(root, 'test-artifacts'), { recursive: true });
    const out = join(root, 'test-artifacts', `loop-run-${run}.log`);
    writeFileSync(out, `${res.stdout}\n${res.stderr}`);
    console.log(`  output: ${out}`);
  }
}
rmSync(report, { force: true });
console.log(`\ntally (${runs} runs of ${file}, ${((Date.now() - started) / 1000).toFixed(0)} s):`);
let allPassed = true;
for (const [title, { passed, failed }] of tally) {
  console.log(`  ${passed}/${passed + failed} passed  ${title}`);
  if (failed) allPassed = false;
}
process.exit(allPassed ? 0 : 1);
