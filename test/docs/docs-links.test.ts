import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { codeSpans, documentationFiles, githubSlug, readMarkdown, relativeLinks, ROOT, SHELL_LANGS, shellCommands, veilInvocation } from './markdown.ts';

/**
 * The README and the pages under docs/ stay in step with the repository: their links resolve,
 * the npm scripts they name exist, and the `veil` commands they show are commands veil has.
 */
const files = documentationFiles().map(readMarkdown);
const byPath = new Map(files.map((f) => [f.path, f]));
const scripts = Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts);

describe('documentation files', () => {
  it("are the README, the pages under docs/ (the specification included) and the examples' READMEs", () => {
    const paths = files.map((f) => f.path);
    for (const p of ['README.md', 'docs/design.md', 'docs/errors.md', 'docs/spec/transform-service.md', 'examples/app-layer/README.md']) {
      expect(paths).toContain(p);
    }
  });

  it('the README is a front page of at most about 260 lines', () => {
    expect(byPath.get('README.md')!.text.split('\n').length).toBeLessThanOrEqual(265);
  });

  it('name no path outside the repository and state no requirement of "this machine"', () => {
    for (const f of files) {
      expect(f.text, f.path).not.toMatch(/\.\.\/shared\/spec|this machine/);
    }
  });

  it('the copied specification names its source on its first line', () => {
    const first = byPath.get('docs/spec/transform-service.md')!.text.split('\n')[0]!;
    expect(first).toMatch(/^> Source: the project's shared specification, `shared\/spec\/transform-service\.md`.*copied on \d{4}-\d{2}-\d{2}/);
  });
});

describe('GitHub heading anchors', () => {
  it('follow github-slugger', () => {
    expect(githubSlug('5. Crypto primitives')).toBe('5-crypto-primitives');
    expect(githubSlug('Exactly-once: the argument')).toBe('exactly-once-the-argument');
    expect(githubSlug('4.1 POST {engine_url}/transform')).toBe('41-post-engine_urltransform');
    expect(githubSlug('Security: the portal and service door')).toBe('security-the-portal-and-service-door');
    expect(githubSlug('HTTP: `POST /transform`')).toBe('http-post-transform');
    expect(githubSlug('Client errors (veil/client)')).toBe('client-errors-veilclient');
    expect(githubSlug('Security — what veil guarantees')).toBe('security--what-veil-guarantees');
  });
});

describe('relative links', () => {
  for (const file of files) {
    it(`${file.path}: every relative link names an existing file, and an existing heading when it has #anchor`, () => {
      const broken: string[] = [];
      for (const { line, target } of relativeLinks(file)) {
        const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
        const path = pathPart === '' ? file.path : normalize(join(dirname(file.path), decodeURI(pathPart)));
        const where = `${file.path}:${line}: ${target}`;
        if (path.startsWith('..') || !existsSync(join(ROOT, path))) {
          broken.push(`${where} (no such file)`);
          continue;
        }
        if (anchor === undefined) continue;
        if (!path.endsWith('.md') || statSync(join(ROOT, path)).isDirectory()) {
          broken.push(`${where} (an anchor into a file that is not markdown)`);
          continue;
        }
        const anchors = (byPath.get(path) ?? readMarkdown(path)).anchors;
        if (!anchors.has(decodeURIComponent(anchor))) broken.push(`${where} (no heading with that anchor)`);
      }
      expect(broken).toEqual([]);
    });
  }
});

describe('repository paths', () => {
  it('every repository path a code span names (`src/…`, `scripts/…`, `docs/…`…) exists', () => {
    const missing: string[] = [];
    let seen = 0;
    for (const file of files) {
      for (const { line, code } of codeSpans(file)) {
        const m = /^((?:src|test|scripts|examples|docs|schemas|patches|config|bench|bin|\.ci|types|tools)\/[\w./-]*)$/.exec(code.trim());
        if (!m) continue;
        seen++;
        if (!existsSync(join(ROOT, m[1]!))) missing.push(`${file.path}:${line}: ${m[1]}`);
      }
    }
    expect(missing).toEqual([]);
    expect(seen).toBeGreaterThan(20);
  });

  it("the README's layout names existing directories, and every directory of src/", () => {
    const readme = byPath.get('README.md')!;
    const layout = readme.fences.find((f) => f.body.startsWith('src/'));
    expect(layout, 'the README has a layout block').toBeDefined();
    const named = [...layout!.body.matchAll(/^(\S+\/)\s/gm)].map((m) => m[1]!);
    expect(named.filter((d) => !existsSync(join(ROOT, d)))).toEqual([]);
    const srcDirs = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => `src/${e.name}/`);
    expect(srcDirs.filter((d) => !named.includes(d))).toEqual([]);
  });
});

describe('npm scripts', () => {
  it('every `npm run <script>` the pages mention is a script of package.json', () => {
    const missing: string[] = [];
    let seen = 0;
    for (const file of files) {
      file.text.split('\n').forEach((text, i) => {
        for (const m of text.matchAll(/npm run ([A-Za-z0-9:_-]+)(\*)?/g)) {
          seen++;
          const ok = m[2] ? scripts.some((s) => s.startsWith(m[1]!)) : scripts.includes(m[1]!);
          if (!ok) missing.push(`${file.path}:${i + 1}: npm run ${m[1]}${m[2] ?? ''}`);
        }
      });
    }
    expect(missing).toEqual([]);
    expect(seen).toBeGreaterThan(10);
  });
});

/** Every distinct `veil <group> [<sub>]` of the pages' shell blocks and code spans, with where it was seen. */
function veilCommands(): Map<string, string> {
  const found = new Map<string, string>();
  const add = (command: string, where: string) => {
    const v = veilInvocation(command);
    if (!v) return;
    const key = v.sub ? `${v.group} ${v.sub}` : v.group;
    if (!found.has(key)) found.set(key, where);
  };
  for (const file of files) {
    for (const fence of file.fences) {
      if (!SHELL_LANGS.has(fence.lang)) continue;
      for (const command of shellCommands(fence.body)) add(command, `${file.path}:${fence.line}`);
    }
    for (const { line, code } of codeSpans(file)) add(code, `${file.path}:${line}`);
  }
  return found;
}

type CliRun = { code: number; stdout: string; stderr: string };

/** veil's command line run on each argument list, in one process (test/docs/cli-probe.ts). */
function probeCli(runs: string[][], cwd: string): Promise<CliRun[]> {
  return new Promise((resolve, reject) => {
    execFile(
      join(ROOT, 'scripts/node22'),
      [join(ROOT, 'test/docs/cli-probe.ts'), JSON.stringify(runs)],
      { cwd, timeout: 30_000, maxBuffer: 16 << 20 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`cli-probe: ${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout) as CliRun[]);
      },
    );
  });
}

/** `veil <args>` as a process, as bin/veil runs it; resolves to its exit code. */
function runCli(args: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = execFile(join(ROOT, 'scripts/node22'), ['src/cli/main.ts', ...args], { cwd: ROOT, timeout: 30_000 }, () => undefined);
    child.on('exit', (code) => resolve(code ?? -1));
  });
}

describe('veil commands', () => {
  it('are found in shell blocks and code spans, not in YAML, SQL or heredoc bodies', () => {
    expect(
      shellCommands(
        "A=1 bin/veil keys list   # ids\ncat > r.json <<'JSON'\nveil nope\nJSON\nVEIL_BASE_URL=x bin/veil stream unprotect --config c.yaml &\nnpm run veil -- demo",
      )
        .map(veilInvocation)
        .filter(Boolean),
    ).toEqual([
      { group: 'keys', sub: 'list' },
      { group: 'stream', sub: 'unprotect' },
      { group: 'demo', sub: undefined },
    ]);
    expect(veilInvocation('bin/veil transform --roles support --request request.json')).toEqual({ group: 'transform', sub: undefined });
    expect(veilInvocation('veil <command> --help')).toBeUndefined();
    const found = [...veilCommands().keys()];
    for (const c of [
      'serve',
      'stream protect',
      'stream unprotect',
      'stream request',
      'gateway',
      'config validate',
      'keys rotate',
      'db install',
      'db grant-reader',
      'transform',
      'demo',
    ]) {
      expect(found).toContain(c);
    }
  });

  it('every `veil <group> <sub>` the pages show answers --help with exit 0, and leaves its working directory alone', async () => {
    const found = veilCommands();
    const commands = [...found.keys()];
    const cwd = mkdtempSync(join(tmpdir(), 'veil-docs-cli-'));
    try {
      const runs = [['help'], ['keys', 'no-such-subcommand', '--help'], ...commands.map((c) => [...c.split(' '), '--help'])];
      const [main, unknown, ...helps] = await probeCli(runs, cwd);
      expect(main!.code).toBe(0);
      expect(unknown!.code, 'a subcommand that does not exist').toBe(2);
      const failed: string[] = [];
      commands.forEach((c, i) => {
        if (helps[i]!.code !== 0) failed.push(`veil ${c} --help exited ${helps[i]!.code} (${found.get(c)}): ${helps[i]!.stderr.trim()}`);
      });
      expect(failed).toEqual([]);
      expect(readdirSync(cwd)).toEqual([]);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it("bin/veil as a process agrees: a real subcommand's --help exits 0, an unknown one 2", async () => {
    expect(await runCli(['keys', 'list', '--help'])).toBe(0);
    expect(await runCli(['keys', 'no-such-subcommand', '--help'])).toBe(2);
    expect(await runCli(['no-such-command', '--help'])).toBe(2);
  });
});
