import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectEslint, rulesFiredAt } from '../helpers/eslint-rules.ts';

const cwd = new URL('../..', import.meta.url).pathname;
const eslint = projectEslint();

/** the src/ directories that a directory's .ts files import, by relative specifiers (static, re-export, dynamic) */
function importedDirs(dir: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const file = join(d, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('.ts')) {
        for (const m of readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)) {
          const target = relative(join(cwd, 'src'), resolve(dirname(file), m[1]!)).split('/')[0]!;
          out.set(target, [...(out.get(target) ?? []), relative(cwd, file)]);
        }
      }
    }
  };
  walk(join(cwd, 'src', dir));
  return out;
}

describe('adapters are siblings below the wiring (veil/adapter-isolation)', () => {
  it('src/gateway, src/stream and src/http import none of each other, and src/json-bytes no adapter (the files as they are)', () => {
    const adapters = ['gateway', 'stream', 'http'];
    for (const from of adapters) {
      const dirs = importedDirs(from);
      for (const to of adapters.filter((a) => a !== from)) expect(dirs.get(to) ?? [], `src/${from} → src/${to}`).toEqual([]);
    }
    const neutral = importedDirs('json-bytes');
    // no adapter: only the engine, whose layerFaultType makes its fault type (errors.ts)
    expect([...neutral.keys()].filter((d) => d !== 'json-bytes' && d !== 'engine')).toEqual([]);
    // both adapters use the neutral scanner rather than a copy of it
    expect(importedDirs('gateway').get('json-bytes')?.length).toBeGreaterThan(0);
    expect(importedDirs('stream').get('json-bytes')?.length).toBeGreaterThan(0);
  });

  it.each([
    ['src/gateway/probe.ts', "import { scanJson } from '../stream/serde/json-scan.ts';\nexport const x = scanJson;\n"],
    ['src/gateway/deep/probe.ts', "export { HttpMetrics } from '../../http/metrics.ts';\n"],
    ['src/stream/serde/probe.ts', "import { locate } from '../../gateway/json-fields.ts';\nexport const x = locate;\n"],
    ['src/stream/probe.ts', "export const m = import('../http/metrics.ts');\n"],
    ['src/http/probe.ts', "export * from '../gateway/selector.ts';\n"],
    ['src/http/routes/probe.ts', "import type { Serde } from '../../stream/serde/serde.ts';\nexport type X = Serde;\n"],
    ['src/portal/probe.ts', "import { HttpMetrics } from '../http/metrics.ts';\nexport const x = HttpMetrics;\n"],
    ['src/json-bytes/probe.ts', "import { StreamError } from '../stream/stream-error.ts';\nexport const x = StreamError;\n"],
    ['src/errors/probe.ts', "import { Upstream } from '../gateway/upstream.ts';\nexport const x = Upstream;\n"],
  ])('rejects in %s an import of a sibling adapter', async (file, code) => {
    expect(await rulesFiredAt(file, code)).toContain('veil/adapter-isolation');
  });

  it('no adapter and no neutral module imports the wiring, src/app or src/cli (the files as they are)', () => {
    const below = readdirSync(join(cwd, 'src'), { withFileTypes: true })
      .filter((e) => e.isDirectory() && !['app', 'cli'].includes(e.name))
      .map((e) => e.name);
    expect(below).toEqual(expect.arrayContaining(['portal', 'http', 'stream', 'gateway', 'control']));
    for (const from of below) {
      const dirs = importedDirs(from);
      for (const to of ['app', 'cli']) expect(dirs.get(to) ?? [], `src/${from} → src/${to}`).toEqual([]);
    }
    // the portal takes its version store and engine holder from the neutral src/control, which imports no adapter
    expect(importedDirs('portal').get('control')?.length).toBeGreaterThan(0);
    expect([...importedDirs('control').keys()].filter((d) => !['control', 'engine', 'errors', 'keystore', 'env', 'file-lock', 'kafka'].includes(d))).toEqual(
      [],
    );
  });

  it('the error codes and their catalog (src/errors) import no layer but the engine: every layer may import them, and none is imported back (issue 44)', () => {
    expect([...importedDirs('errors').keys()].filter((d) => !['errors', 'engine'].includes(d))).toEqual([]);
    // the layers' error types are made from the codes there
    for (const layer of ['keystore', 'stream', 'gateway', 'portal', 'db', 'subjects', 'identity', 'audit', 'control'])
      expect(importedDirs(layer).get('errors')?.length, layer).toBeGreaterThan(0);
  });

  it.each([
    ['src/portal/probe.ts', "import { compileVeilConfigText } from '../app/config-file.ts';\nexport const x = compileVeilConfigText;\n"],
    ['src/portal/routes/probe.ts', "import type { VeilConfig } from '../../app/config-file.ts';\nexport type X = VeilConfig;\n"],
    ['src/portal/probe.ts', "export { provisionKeys } from '../app/config-keys.ts';\n"],
    ['src/http/probe.ts', "export const m = import('../app/open-service.ts');\n"],
    ['src/stream/probe.ts', "export * from '../cli/main.ts';\n"],
    ['src/gateway/probe.ts', "import { openGateway } from '../app/open-gateway.ts';\nexport const x = openGateway;\n"],
    ['src/db/probe.ts', "import { isProduction } from '../app/open-engine.ts';\nexport const x = isProduction;\n"],
    ['src/client/probe.ts', "import { isProduction } from '../app/open-engine.ts';\nexport const x = isProduction;\n"],
    ['src/control/probe.ts', "import { compileVeilConfigText } from '../app/config-file.ts';\nexport const x = compileVeilConfigText;\n"],
    ['src/errors/probe.ts', "import { isProduction } from '../app/open-engine.ts';\nexport const x = isProduction;\n"],
  ])('rejects in %s an import of the wiring', async (file, code) => {
    const [result] = await eslint.lintText(code, { filePath: `${cwd}${file}` });
    const messages = result!.messages.filter((m) => m.ruleId === 'veil/adapter-isolation');
    expect(messages.length).toBe(1);
    expect(messages[0]!.message).toMatch(/the wiring \(src\/app, src\/cli\) depends on adapters and neutral modules, never the reverse/);
  });

  it('rejects in src/control an import of an adapter (src/control is neutral)', async () => {
    expect(
      await rulesFiredAt('src/control/probe.ts', "import type { EngineSource } from '../http/engine-source.ts';\nexport type X = EngineSource;\n"),
    ).toContain('veil/adapter-isolation');
  });

  it('allows the portal src/control, and the wiring src/control, the portal and each other', async () => {
    expect(
      await rulesFiredAt(
        'src/portal/probe.ts',
        "import type { ConfigVersions } from '../control/index.ts';\nimport type { EngineHolder } from '../control/index.ts';\nexport type X = [ConfigVersions, EngineHolder<unknown>];\n",
      ),
    ).toEqual([]);
    expect(
      await rulesFiredAt(
        'src/app/open-probe.ts',
        "import { EngineHolder } from '../control/index.ts';\nimport { registerPortal } from '../portal/portal.ts';\nexport const x = [EngineHolder, registerPortal];\n",
      ),
    ).toEqual([]);
    expect(await rulesFiredAt('src/cli/probe.ts', "import { openService } from '../app/open-service.ts';\nexport const x = openService;\n")).toEqual([]);
  });

  it('allows an adapter its own files and the neutral modules, and the wiring every adapter', async () => {
    expect(
      await rulesFiredAt(
        'src/gateway/probe.ts',
        "import { scanJson } from '../json-bytes/scan.ts';\nimport { Upstream } from './upstream.ts';\nimport { problemOf } from '../errors/problem.ts';\nexport const x = [scanJson, Upstream, problemOf];\n",
      ),
    ).toEqual([]);
    expect(
      await rulesFiredAt(
        'src/stream/serde/probe.ts',
        "import { scanJson } from '../../json-bytes/scan.ts';\nimport { StreamError } from '../stream-error.ts';\nexport const x = [scanJson, StreamError];\n",
      ),
    ).toEqual([]);
    expect(
      await rulesFiredAt(
        'src/app/open-probe.ts',
        "import { createGateway } from '../gateway/gateway-server.ts';\nimport { HttpMetrics } from '../http/metrics.ts';\nexport const x = [createGateway, HttpMetrics];\n",
      ),
    ).toEqual([]);
  });
});

describe('the control plane has one front door, and src/app only wires (issue 31)', () => {
  it.each([
    ['src/portal/probe.ts', "import type { ConfigVersions } from '../control/config-versions.ts';\nexport type X = ConfigVersions;\n"],
    ['src/app/open-probe.ts', "export { signWrite } from '../control/control-store.ts';\n"],
    ['src/cli/probe.ts', "export const m = import('../control/kafka-control-log.ts');\n"],
    ['src/http/probe.ts', "import { GuardedTransform } from '../audit/guarded-transform.ts';\nexport const x = GuardedTransform;\n"],
    ['src/drift-guard/probe.ts', "import { contextOf } from '../discover/field-context.ts';\nexport const x = contextOf;\n"],
    ['src/stream/serde/probe.ts', "import { JsonGuard } from '../../drift-guard/json-guard.ts';\nexport const x = JsonGuard;\n"],
    ['src/cli/probe.ts', "import { runDriftCheck } from '../db/drift-check.ts';\nexport const x = runDriftCheck;\n"],
    ['src/http/probe.ts', "import { JwtSigner } from '../keystore/jwt-signer.ts';\nexport const x = JwtSigner;\n"],
    ['src/app/open-probe.ts', "export const m = import('../keystore/kms/kms-from-env.ts');\n"],
    ['src/gateway/probe.ts', "import { openTracing } from '../observability/tracing.ts';\nexport const x = openTracing;\n"],
    ['src/portal/probe.ts', "import type { Caller } from '../identity/token-verifier.ts';\nexport type X = Caller;\n"],
  ])(
    'rejects in %s an import past a front door (src/control, src/audit, src/discover, src/drift-guard, src/db, src/keystore, src/observability, src/identity index.ts)',
    async (file, code) => {
      expect(await rulesFiredAt(file, code)).toContain('veil/front-doors');
    },
  );

  it('allows a module with a front door its own files, everyone its index and its errors', async () => {
    expect(
      await rulesFiredAt(
        'src/http/probe.ts',
        "import { GuardedTransform } from '../audit/index.ts';\nimport { AuditError } from '../audit/errors.ts';\nexport const x = [GuardedTransform, AuditError];\n",
      ),
    ).toEqual([]);
    expect(await rulesFiredAt('src/discover/probe.ts', "import { contextOf } from './field-context.ts';\nexport const x = contextOf;\n")).toEqual([]);
    expect(
      await rulesFiredAt(
        'src/http/probe.ts',
        "import { JwtSigner } from '../keystore/index.ts';\nimport { KeystoreError } from '../keystore/errors.ts';\nimport { openTracing } from '../observability/index.ts';\nimport { TokenVerifier } from '../identity/index.ts';\nexport const x = [JwtSigner, KeystoreError, openTracing, TokenVerifier];\n",
      ),
    ).toEqual([]);
    expect(await rulesFiredAt('src/keystore/probe.ts', "import { awsKms } from './kms/aws-kms.ts';\nexport const x = awsKms;\n")).toEqual([]);
  });

  it('allows src/control its own files and everyone else its index', async () => {
    expect(await rulesFiredAt('src/control/probe.ts', "import { KeysetMirror } from './keyset-mirror.ts';\nexport const x = KeysetMirror;\n")).toEqual([]);
    expect(
      await rulesFiredAt('src/cli/probe.ts', "import { openKafkaControlLog } from '../control/index.ts';\nexport const x = openKafkaControlLog;\n"),
    ).toEqual([]);
  });

  it.each(['src/app/control-store.ts', 'src/app/keyset-mirror.ts', 'src/app/paths.ts', 'src/app/pipeline-serde.ts', 'src/app/sub/open-x.ts'])(
    'rejects %s: not wiring',
    async (file) => {
      expect(await rulesFiredAt(file, 'export const x = 1;\n')).toContain('veil/wiring-only');
    },
  );

  it.each(['src/app/open-service.ts', 'src/app/config-file.ts', 'src/app/config-file-schemas.ts', 'src/app/logger.ts', 'src/app/protect-thread.ts'])(
    'allows %s',
    async (file) => {
      expect(await rulesFiredAt(file, 'export const x = 1;\n')).toEqual([]);
    },
  );

  it.each([
    ['a class', 'export class Sampler { n = 0; }\n'],
    ['a while loop', 'export function f(n: number) { while (n > 0) n--; return n; }\n'],
    ['a regular expression', 'export const TABLE = /^[a-z]+$/;\n'],
    ['a RegExp', "export const re = new RegExp('x');\n"],
    ['a Kafka client', "import { Kafka } from 'kafkajs';\nexport const x = Kafka;\n"],
    ['a socket', "import { createServer } from 'node:net';\nexport const x = createServer;\n"],
    ['a process', "import { spawn } from 'node:child_process';\nexport const x = spawn;\n"],
    ['a terminal', "import { createInterface } from 'node:readline';\nexport const x = createInterface;\n"],
  ])('judges what a file of src/app does, whatever its name: rejects %s', async (_, code) => {
    expect(await rulesFiredAt('src/app/open-probe.ts', code)).toContain('veil/wiring-only');
  });

  it("src/app's files as they are do no work of their own, and a type import of an I/O module is no conversation", async () => {
    const results = await eslint.lintFiles(['src/app']);
    expect(results.length).toBeGreaterThan(10);
    expect(results.flatMap((r) => r.messages.filter((m) => m.ruleId === 'veil/wiring-only').map((m) => `${r.filePath}: ${m.message}`))).toEqual([]);
    expect(await rulesFiredAt('src/app/open-probe.ts', "import type { Server } from 'node:http';\nexport type X = Server;\n")).toEqual([]);
  });

  it('src/app holds only wiring (the files as they are)', () => {
    const names = readdirSync(join(cwd, 'src', 'app'));
    expect(names.filter((n) => !/^(open-[a-z0-9-]+|config-file(-[a-z0-9-]+)?|logger|[a-z0-9-]+-thread)\.ts$/.test(n))).toEqual([]);
  });
});
