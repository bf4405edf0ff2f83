import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ROOT } from '../helpers/processes.ts';
import { COMPOSE_SPEC, goModuleFile } from '../deploy/kube-tools.ts';

interface Service {
  image?: string;
  build?: unknown;
  entrypoint?: string[];
  command?: string[];
  read_only?: boolean;
  tmpfs?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  environment?: Record<string, string>;
  healthcheck?: { test?: string[]; disable?: boolean };
}
const text = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
// merge keys (<<: *veil), as Compose reads them
const compose = parse(text, { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const services = Object.entries(compose.services);
const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
/** the image the Dockerfile builds: its entrypoint is bin/veil, so a service's command is veil's arguments */
const IMAGE = `veil:${version}`;
const veilServices = services.filter(([, s]) => s.image === IMAGE && !s.entrypoint);
const veilCommands = veilServices.map(([name, s]) => ({ name, args: s.command ?? [] }));
const run = (args: string[]) => promisify(execFile)(join(ROOT, 'bin/veil'), args, { cwd: ROOT, env: { ...process.env, VEIL_LOG_LEVEL: 'warn' } });
/** the data dir the Dockerfile declares as its VOLUME and VEIL_DATA_DIR */
const DATA_DIR = '/var/lib/veil';

// No Docker engine runs here: this checks the compose file against the real CLI, the Dockerfile and the Compose specification instead.
describe('docker-compose.yml', () => {
  it('runs what `npm run demo` runs, on several hosts: two API replicas, two protect processes, the unprotect responder', () => {
    expect(veilCommands.map((c) => c.args.slice(0, c.args[0] === 'stream' ? 2 : 1).join(' ')).sort()).toEqual([
      'serve',
      'serve',
      'stream protect',
      'stream protect',
      'stream unprotect',
    ]);
  });

  it('every veil service runs the image the Dockerfile builds, with a read-only root filesystem (writes go to its data dir volume and /tmp)', () => {
    const veil = services.filter(([, s]) => s.image?.startsWith('veil:'));
    expect(veil.map(([n]) => n).sort()).toEqual(['veil-api', 'veil-api-2', 'veil-kms-key', 'veil-stream', 'veil-stream-2', 'veil-topics', 'veil-unprotect']);
    for (const [name, s] of veil) {
      expect(s.image, name).toBe(IMAGE);
      expect(s.build, name).toBe('.');
      expect(s.read_only, name).toBe(true);
      expect(s.tmpfs, name).toEqual(['/tmp']);
      // no bind mount of the source tree: the image holds the code
      expect(
        (s.volumes ?? []).filter((v) => v.startsWith('.') || v.startsWith('/')),
        name,
      ).toEqual([]);
    }
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(new RegExp(`VEIL_DATA_DIR=${DATA_DIR}\\b`));
    expect(dockerfile).toContain(`VOLUME ["${DATA_DIR}"]`);
  });

  it('its veil processes share only the Kafka control store and the KMS key: each has a data dir (a volume) of its own, one token issuer', () => {
    const env = veilServices.map(([, s]) => s.environment ?? {});
    expect(env).toHaveLength(5);
    for (const e of env) {
      expect(e).toMatchObject({
        VEIL_CONTROL_STORE: 'kafka',
        KAFKA_BROKERS: 'kafka:9092',
        VEIL_KMS: 'aws-kms',
        VEIL_KMS_KEY_ID: 'alias/veil',
        VEIL_KMS_ENDPOINT: 'http://kms:5000',
      });
      expect(e.VEIL_MASTER_KEY).toBeUndefined();
    }
    const dataVolumes = veilServices.map(([name, s]) => {
      const dir = s.environment?.VEIL_DATA_DIR ?? DATA_DIR;
      const mounts = (s.volumes ?? []).map((v) => v.split(':')).filter(([, target]) => target === dir);
      expect(mounts, `${name}: one volume at its data dir ${dir}`).toHaveLength(1);
      const volume = mounts[0]![0]!;
      expect(Object.keys(compose.volumes), `${name}: ${volume} is a named volume`).toContain(volume);
      return volume;
    });
    expect(new Set(dataVolumes).size).toBe(5);
    expect(new Set(env.filter((e) => e.VEIL_BASE_URL).map((e) => e.VEIL_BASE_URL))).toEqual(new Set(['http://localhost:8080']));
  });

  it('the KMS key the services name is made before any of them starts', () => {
    const key = compose.services['veil-kms-key']!;
    expect([...key.entrypoint!, ...key.command!].join(' ')).toMatch(/scripts\/create-kms-key\.ts alias\/veil$/);
    expect(compose.services['veil-api']!.depends_on!['veil-kms-key']).toEqual({ condition: 'service_completed_successfully' });
    // every other veil service waits (directly or through others) for veil-api, which waits for the key
    const reaches = (name: string, target: string, seen = new Set<string>()): boolean =>
      name === target || (!seen.has(name) && (seen.add(name), Object.keys(compose.services[name]!.depends_on ?? {}).some((d) => reaches(d, target, seen))));
    for (const { name } of veilCommands) expect(reaches(name, 'veil-kms-key'), name).toBe(true);
  });

  it("health: the API replicas answer /readyz; stream protect and the responder point the image's HEALTHCHECK at their --port", () => {
    for (const [name, s] of veilServices) {
      const [cmd, sub] = s.command!;
      if (cmd === 'serve') expect(s.healthcheck!.test!.join(' '), name).toContain('http://127.0.0.1:8080/readyz');
      if (sub === 'protect' || sub === 'unprotect')
        expect(s.environment!.VEIL_HEALTHCHECK_URL, name).toBe(`http://127.0.0.1:${s.command![s.command!.indexOf('--port') + 1]}/healthz`);
    }
  });

  it.each(veilCommands)('$name: every flag of `bin/veil $args` is a real flag of a real command', async ({ args }) => {
    // each command parses its flags strictly before it looks at --help: an unknown flag exits 2
    const { stdout } = await run([...args, '--help']);
    expect(stdout).toMatch(/^Usage: veil /);
  });

  it.each(veilCommands.filter((c) => c.args.includes('--config')))('$name: its --config file is a valid configuration', async ({ args }) => {
    const file = args[args.indexOf('--config') + 1]!;
    const { stdout } = await run(['config', 'validate', file]);
    expect(stdout).toMatch(/valid/i);
  });

  it('names only services it defines, and scripts that exist', () => {
    for (const [, s] of services) {
      for (const d of Object.keys(s.depends_on ?? {})) expect(Object.keys(compose.services)).toContain(d);
      for (const m of [...(s.entrypoint ?? []), ...(s.command ?? [])].join(' ').matchAll(/(scripts\/[\w./-]+)/g))
        expect(existsSync(join(ROOT, m[1]!)), m[1]).toBe(true);
    }
  });

  it("is a valid Compose file (the Compose specification's JSON Schema, from compose-go)", async () => {
    const schema = JSON.parse(await readFile(await goModuleFile(COMPOSE_SPEC), 'utf8')) as object;
    const validate = new Ajv2020({ strict: false, allErrors: true, validateFormats: false }).compile(schema);
    expect(validate(parse(text, { merge: true })), JSON.stringify(validate.errors, null, 1)).toBe(true);
    // and the check is not vacuous: a misspelt key is refused
    const broken = parse(text, { merge: true }) as { services: Record<string, Record<string, unknown>> };
    broken.services['veil-api']!.read_onyl = true;
    expect(validate(broken)).toBe(false);
  }, 300_000);
});
