import { existsSync } from 'node:fs';
import { defineConfig } from 'vitest/config';
import SlowFilesFirst from './test/setup/slow-files-first.ts';

const workers = Number(process.env.VEIL_TEST_WORKERS ?? 2);
if (!Number.isInteger(workers) || workers < 1) throw new Error('VEIL_TEST_WORKERS must be a whole number of at least 1');

/**
 * Files that time a running service in milliseconds (a latency bound, a sandbox time limit, a
 * version reaching every process within 2 s): another file's load beside them measures the
 * machine, not veil. They run after the others, one at a time (docs/testing.md).
 */
const TIMED = [
  'test/security/portal/portal-draft-bounds.test.ts',
  'test/integration/control/control-store-processes.test.ts',
  'test/integration/control/control-store-three.test.ts',
  'test/integration/subjects/subjects-kafka.test.ts',
  'test/integration/gateway/gateway-faults.test.ts',
  'test/integration/http/serve-workers-publish.test.ts',
  'test/portal/door-guards.test.ts',
  // a rollout's handover within 5 s (issue 40)
  'test/integration/stream/stream-rollout-handover.test.ts',
];
// a renamed file would otherwise leave the list quietly and run beside the others
for (const file of TIMED) if (!existsSync(new URL(file, import.meta.url))) throw new Error(`vitest.config.ts: TIMED names ${file}, which does not exist`);
// the long chaos run is `npm run test:chaos`; `npm test` runs the 3-kill crash test
const CHAOS = process.env.VEIL_CHAOS ? [] : ['test/integration/stream/stream-chaos.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    globalSetup: ['./test/setup/tool-cache.ts', './test/setup/native-build.ts', './test/setup/kafka-env.ts', './test/setup/postgres-env.ts'],
    reporters: ['default', './test/summary-reporter.ts'],
    sequence: { sequencer: SlowFilesFirst },
    projects: [
      {
        // Two test files at a time, whatever the machine: the real-component files spend most of
        // their time waiting on Kafka, PostgreSQL and child processes (one worker kept 2 cores
        // 23–54% busy), so two of them cut the run by a third to a half on a 2-core machine
        // (docs/testing.md).
        // Fixed, not per core, so a bigger CI machine runs the timings these tests were proven
        // under. VEIL_TEST_WORKERS=1 runs one file at a time.
        extends: true,
        test: { name: 'veil', include: ['test/**/*.test.ts'], exclude: [...CHAOS, ...TIMED], maxWorkers: workers },
      },
      { extends: true, test: { name: 'timed', include: TIMED, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
});
