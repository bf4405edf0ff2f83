import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const root = new URL('../../..', import.meta.url).pathname;

/**
 * scripts/schemathesis.sh: schemathesis against a real `veil serve` and its own /openapi.json,
 * every check, 1,000 examples per operation. The service and its document agree: 0 failures.
 * (About 90 s on 2 cores; the first run also installs schemathesis into ~/.cache/veil.)
 */
describe('schemathesis', () => {
  it('finds no failure with all checks at 1,000 examples per operation', async () => {
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = execFile(`${root}scripts/schemathesis.sh`, [], { cwd: root, maxBuffer: 64 * 1024 * 1024, timeout: 900_000 }, (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, output: `${stdout}${stderr}` });
      });
      child.stdin?.end();
    });
    const tail = output.slice(-6000);
    expect(code, tail).toBe(0);
    expect(output, tail).toMatch(/No issues found in/);
    const [, generated, passed] = /(\d+) generated, (\d+) passed/.exec(output) ?? [];
    expect(Number(passed), tail).toBe(Number(generated));
    // transform gets 1,000 examples; Hypothesis stops early on an operation whose inputs it has
    // exhausted (the token form, the GET operations), so the total varies from run to run
    // (seen: 1,304 and 1,433 as well as over 2,000) and at least transform's 1,000 are required
    expect(Number(generated), tail).toBeGreaterThanOrEqual(1000);
    expect(output, tail).not.toMatch(/\d+ failures?\b|Failures:/);
  }, 1_000_000);
});
