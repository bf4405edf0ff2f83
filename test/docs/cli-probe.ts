/**
 * Runs veil's command line (src/cli/main.ts's `main`, what `bin/veil` runs) once per argument list
 * in one process, so the documentation test asks for dozens of `--help` texts without starting
 * a Node.js process for each. Usage: scripts/node22 test/docs/cli-probe.ts '[["keys","list","--help"]]'
 * Prints a JSON array of { code, stdout, stderr }.
 */
import { main } from '../../src/cli/main.ts';

const runs = JSON.parse(process.argv[2] ?? '[]') as string[][];
const results: { code: number; stdout: string; stderr: string }[] = [];
for (const argv of runs) {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    readStdin: async () => '',
    env: { PATH: process.env.PATH },
    cwd: process.cwd(),
    now: () => new Date(),
  });
  results.push({ code, stdout, stderr });
}
process.stdout.write(JSON.stringify(results));
process.exit(0);
