import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ROOT } from '../helpers/processes.ts';

interface Service { command?: string; depends_on?: Record<string, unknown> | string[]; environment?: Record<string, string> }
const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8')) as { services: Record<string, Service> };
const services = Object.entries(compose.services);
/** `bin/veil …` inside a service's `sh -c "…"`, up to the next `&&` */
const veilCommands = services.flatMap(([name, s]) => [...(s.command ?? '').matchAll(/bin\/veil ([^&"]+)/g)].map((m) => ({ name, args: m[1]!.trim().split(/\s+/) })));
const run = (args: string[]) => promisify(execFile)(join(ROOT, 'bin/veil'), args, { cwd: ROOT, env: { ...process.env, VEIL_LOG_LEVEL: 'warn' } });

// No Docker engine runs here: this checks the compose file against the real CLI instead.
describe('docker-compose.yml', () => {
  it('runs what `npm run demo` runs, on several hosts: two API replicas, two protect processes, the unprotect responder', () => {
    expect(veilCommands.map((c) => c.args.slice(0, c.args[0] === 'stream' ? 2 : 1).join(' ')).sort()).toEqual(['serve', 'serve', 'stream protect', 'stream protect', 'stream unprotect']);
  });

  it('its veil processes share only the Kafka control store and the KMS key: each has a data dir of its own, one token issuer', () => {
    const veil = [...new Set(veilCommands.map((c) => c.name))].map((name) => compose.services[name]!.environment ?? {});
    expect(veil).toHaveLength(5);
    for (const env of veil) {
      expect(env).toMatchObject({ VEIL_CONTROL_STORE: 'kafka', KAFKA_BROKERS: 'kafka:9092', VEIL_KMS: 'aws-kms', VEIL_KMS_KEY_ID: 'alias/veil', VEIL_KMS_ENDPOINT: 'http://kms:5000' });
      expect(env.VEIL_MASTER_KEY).toBeUndefined();
    }
    expect(new Set(veil.map((env) => env.VEIL_DATA_DIR)).size).toBe(5);
    expect(new Set(veil.filter((env) => env.VEIL_BASE_URL).map((env) => env.VEIL_BASE_URL))).toEqual(new Set(['http://localhost:8080']));
    // the KMS key the services name is made before the first of them starts
    expect(compose.services['veil-api']!.command).toMatch(/scripts\/create-kms-key\.ts alias\/veil && bin\/veil serve/);
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
      const deps = Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});
      for (const d of deps) expect(Object.keys(compose.services)).toContain(d);
      for (const m of (s.command ?? '').matchAll(/(scripts\/[\w./-]+)/g)) expect(existsSync(join(ROOT, m[1]!)), m[1]).toBe(true);
    }
  });
});
