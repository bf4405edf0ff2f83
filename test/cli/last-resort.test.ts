import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { describeFailure, UNHANDLED_EXIT_CODE } from '../../src/cli/last-resort.ts';

const node = new URL('../../scripts/node22', import.meta.url).pathname;
const lastResort = new URL('../../src/cli/last-resort.ts', import.meta.url).pathname;

/** Runs a script in a real process with the last-resort handlers installed; returns its exit code and stderr. */
async function runWith(script: string): Promise<{ code: number; stderr: string }> {
  const program = `import { installLastResort } from ${JSON.stringify(lastResort)};\ninstallLastResort((l) => process.stderr.write(l));\n${script}`;
  try {
    const { stderr } = await promisify(execFile)(node, ['--input-type=module', '-e', program], { timeout: 20_000 });
    return { code: 0, stderr };
  } catch (e) {
    const err = e as { code: number; stderr: string };
    return { code: err.code, stderr: err.stderr };
  }
}

describe('last resort: failures nothing else caught', () => {
  it('an unhandled rejection from a client-like error exits 70 with one typed line, no stack trace', async () => {
    const { code, stderr } = await runWith(`
      class KafkaJSGroupCoordinatorNotFound extends Error { constructor() { super('Failed to find group coordinator\\n  detail'); this.name = 'KafkaJSGroupCoordinatorNotFound'; this.type = 'GROUP_COORDINATOR_NOT_AVAILABLE'; } }
      setTimeout(() => Promise.reject(new KafkaJSGroupCoordinatorNotFound()), 10);
      setTimeout(() => {}, 5000);`);
    expect(code).toBe(UNHANDLED_EXIT_CODE);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      code: 'UNHANDLED_FAILURE',
      origin: 'unhandledRejection',
      error: 'KafkaJSGroupCoordinatorNotFound',
      errorCode: 'GROUP_COORDINATOR_NOT_AVAILABLE',
    });
    expect(stderr).not.toContain('Failed to find');
    expect(stderr).not.toMatch(/\n\s+at /);
  }, 30_000);

  it('an exception thrown from a callback exits 70 the same way, without its message (a message can quote input)', async () => {
    const { code, stderr } = await runWith(`setTimeout(() => { throw new TypeError('boom'); }, 10); setTimeout(() => {}, 5000);`);
    expect(code).toBe(UNHANDLED_EXIT_CODE);
    expect(JSON.parse(stderr.trim())).toMatchObject({ code: 'UNHANDLED_FAILURE', origin: 'uncaughtException', error: 'TypeError' });
    expect(stderr).not.toContain('boom');
  }, 30_000);

  it('describes anything thrown, not only errors, without its contents', () => {
    expect(describeFailure('a string with a secret')).toEqual({ error: 'string' });
    expect(describeFailure(undefined)).toEqual({ error: 'undefined' });
  });
});
