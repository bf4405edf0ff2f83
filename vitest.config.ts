import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // the long chaos run is `npm run test:chaos`; `npm test` runs the 3-kill crash test
    exclude: process.env.VEIL_CHAOS ? [] : ['test/integration/stream-chaos.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    globalSetup: ['./test/setup/kafka-env.ts', './test/setup/postgres-env.ts'],
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
