import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { documentationFiles, readMarkdown, ROOT, SHELL_LANGS, shellCommands } from './markdown.ts';

/**
 * The examples the pages show are the ones the integration tests run: the tests run the script or
 * the commands, and these checks keep the pages' copies of them identical. (They read files only;
 * the integration tests that run the commands are named beside each check.)
 */
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

describe('the README quick start', () => {
  it('shows the commands of docs/examples/http-round-trip.sh, which test/integration/http/serve.test.ts runs', () => {
    const readme = read('README.md');
    const script = read('docs/examples/http-round-trip.sh');
    const commands = script
      .split('\n')
      .map((l) => l.trim())
      .filter(
        (l) =>
          l &&
          !l.startsWith('#') &&
          !l.startsWith('set ') &&
          !l.startsWith('VEIL=') &&
          !l.startsWith('SECRET=') &&
          l !== 'echo' &&
          l !== '}' &&
          l !== 'body() {',
      );
    expect(commands.length).toBeGreaterThan(5);
    for (const line of commands) expect(readme, line).toContain(line);
  });

  it('keeps the set-up and test commands', () => {
    const readme = read('README.md');
    expect(readme).toContain('```sh\nnpm ci && npm start\n```');
    expect(readme).toContain('```sh\nnpm ci && npm test\n```');
  });
});

describe('examples/app-layer (test/integration/client/app-layer.test.ts runs it)', () => {
  it("docs/client.md and the example's README give the commands the test runs", () => {
    for (const file of ['docs/client.md', 'examples/app-layer/README.md']) {
      const text = read(file);
      for (const command of [
        'export $(scripts/pg-env.sh start)',
        'scripts/node22 examples/app-layer/server.ts',
        'npm start',
        "psql -h 127.0.0.1 -p 15432 -U postgres -c 'SELECT * FROM customers'",
      ]) {
        expect(text, `${file}: ${command}`).toContain(command);
      }
    }
  });
});

describe('scripts the pages run', () => {
  it('every repository script a shell block runs (scripts/, examples/, docs/examples/, bin/, .ci/) exists and is executable', () => {
    const problems: string[] = [];
    let seen = 0;
    for (const file of documentationFiles().map(readMarkdown)) {
      for (const fence of file.fences) {
        if (!SHELL_LANGS.has(fence.lang)) continue;
        for (const command of shellCommands(fence.body)) {
          const m = /^(?:\.\/)?((?:scripts|examples|docs\/examples|bin|\.ci)\/[\w./-]+)/.exec(command);
          if (!m) continue;
          seen++;
          const path = m[1]!;
          if (!existsSync(join(ROOT, path))) problems.push(`${file.path}:${fence.line}: ${path} does not exist`);
          else {
            try {
              accessSync(join(ROOT, path), constants.X_OK);
            } catch {
              problems.push(`${file.path}:${fence.line}: ${path} is not executable`);
            }
          }
          // scripts/node22 <file>: the file it runs must exist too
          const runs = /^scripts\/node22\s+(\S+)/.exec(command);
          if (runs && !existsSync(join(ROOT, runs[1]!))) problems.push(`${file.path}:${fence.line}: ${runs[1]} does not exist`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(seen).toBeGreaterThan(5);
  });
});
