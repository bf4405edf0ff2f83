import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const cwd = new URL('../..', import.meta.url).pathname;

describe('typecheck', () => {
  it('the project compiles under strict TypeScript with no errors', async () => {
    const run = promisify(execFile)(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'tsconfig.json'], { cwd })
      .then(() => '')
      .catch((e: { stdout?: string }) => e.stdout ?? String(e));
    expect(await run).toBe('');
  }, 180_000);
});
