// npm run bench:http — values/s and p50/p99 latency of POST /transform over a real socket for
// batches of 1, 100 and 1,000 FF1 instances, with `veil serve --workers 2` (both cores), beside
// the in-process engine on the same batches measured in the same run: on the JavaScript engine's
// primitives (the oracle) and on the native core (what the service runs). Load: wrk, or autocannon
// (bench/http-load.ts); each batch size is measured after a warm-up.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine, JS_PRIMITIVES, MemoryKeyProvider } from '../src/engine/index.ts';
import { nativePrimitives } from '../src/native/index.ts';
import { compileVeilConfigText } from '../src/app/config-file.ts';
import { fmt, opsPerSecond, ratio } from './measure.ts';
import { loadGenerator } from './http-load.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const workers = Number(process.env.BENCH_WORKERS ?? 2);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const generator = loadGenerator();
const port = 18000 + Math.floor(Math.random() * 1000);
const root = new URL('..', import.meta.url).pathname;
const configFile = join(root, 'bench/http-config.yaml');
const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const batch = (n: number) => ({
  rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: 'ingest' }] }],
  processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: 'Protect' }] }],
  requests: [
    {
      guid: guid(3),
      rightsContext: guid(1),
      processingContext: guid(2),
      instances: Array.from({ length: n }, (_, i) => ({
        className: 'Customer',
        propertyName: 'cardNumber',
        value: `4${String(100000000000000 + i * 7919).padStart(15, '0')}`,
      })),
    },
  ],
});

/** CPU seconds (user + system) a process and its children (the cluster's workers) have used, from /proc. */
async function cpuSeconds(pid: number): Promise<number> {
  const ticks = async (p: number): Promise<number> => {
    const fields = (await readFile(`/proc/${p}/stat`, 'utf8')).split(') ')[1]!.split(' ');
    return Number(fields[11]) + Number(fields[12]);
  };
  const children = (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '')).split(' ').filter(Boolean).map(Number);
  const all = await Promise.all([pid, ...children].map((p) => ticks(p).catch(() => 0)));
  return all.reduce((a, b) => a + b, 0) / 100;
}

async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('service did not become ready');
}

const dataDir = await mkdtemp(join(tmpdir(), 'veil-bench-'));
const server: ChildProcess = spawn(
  process.execPath,
  [join(root, 'src/cli/main.ts'), 'serve', '--config', configFile, '--data-dir', dataDir, '--port', String(port), '--workers', String(workers)],
  {
    env: { ...process.env, VEIL_LOG_LEVEL: 'warn', VEIL_MASTER_KEY: 'b'.repeat(64) },
    stdio: ['ignore', 'ignore', 'inherit'],
  },
);
const url = `http://127.0.0.1:${port}`;
try {
  await waitReady(url);
  const secret = (await readFile(join(dataDir, 'dev-client.secret'), 'utf8')).trim();
  const tokenRes = await fetch(`${url}/connect/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: secret }),
  });
  const { access_token: token } = (await tokenRes.json()) as { access_token: string };

  // the in-process engine on the same batches, one core
  // the engine section of the same file the service runs (it has a service section too)
  const loaded = compileVeilConfigText(await readFile(configFile, 'utf8'));
  if (!loaded.config) throw new Error(`bench/http-config.yaml: ${loaded.issues.map((i) => `${i.pointer} ${i.message}`).join('; ')}`);
  const compiled = loaded.config.engine;
  const keys = new MemoryKeyProvider();
  keys.add('pan', 'ff1', new Uint8Array(32).fill(5), 'now');
  const engine = new Engine({ config: compiled, keys, primitives: JS_PRIMITIVES });
  const nativeEngine = new Engine({ config: compiled, keys, primitives: nativePrimitives() });

  console.log(
    `veil bench:http — Node ${process.version}, veil serve --workers ${workers}, ${generator.name} ${seconds}s per batch size after ${warmupSeconds}s of warm-up, loopback\n`,
  );
  console.log(
    `batch   connections  calls/s   values/s    p50 ms   p99 ms   in-process values/s (1 core): JS engine / native   HTTP / JS engine   HTTP / (${workers} × JS engine)   per server CPU-second / JS engine   native / JS in-process`,
  );
  let thousand = 0;
  for (const size of [1, 100, 1000]) {
    const body = JSON.stringify(batch(size));
    const connections = size === 1 ? 32 : size === 100 ? 16 : 8;
    const load = (duration: number) =>
      generator.run({
        url: `${url}/transform`,
        connections,
        seconds: duration,
        body,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      });
    // the service is measured warm, as the in-process engine is (opsPerSecond warms it up first)
    await load(warmupSeconds);
    const cpuBefore = await cpuSeconds(server.pid!);
    const result = await load(seconds);
    const values = result.callsPerSecond * size;
    // the load generator shares the cores: values per CPU-second the service itself spent, beside the engine's
    const serverCpu = (await cpuSeconds(server.pid!)) - cpuBefore;
    const perServerCpuSecond = (result.calls * size) / serverCpu;
    const inProcess = opsPerSecond(() => engine.transform(JSON.parse(body), { roles: ['ingest'] }), size, 1500);
    const inProcessNative = opsPerSecond(() => nativeEngine.transform(JSON.parse(body), { roles: ['ingest'] }), size, 1500);
    if (size === 1000) thousand = values / inProcess;
    console.log(
      `${String(size).padEnd(8)}${String(connections).padEnd(13)}${fmt(result.callsPerSecond).padEnd(10)}${fmt(values).padEnd(12)}${String(result.p50Ms).padEnd(9)}${String(result.p99Ms).padEnd(9)}${`${fmt(inProcess)} / ${fmt(inProcessNative)}`.padEnd(50)}${ratio(values, inProcess).padEnd(19)}${ratio(values, workers * inProcess).padEnd(28)}${ratio(perServerCpuSecond, inProcess).padEnd(36)}${ratio(inProcessNative, inProcess)}`,
    );
  }
  console.log(
    `\ntarget (issue 42): 1,000-value batches over HTTP (the service on the native core) ≥ 2× the JavaScript engine's values/s in the same run: ${thousand >= 2 ? 'met' : 'not met'} (${thousand.toFixed(2)}×)`,
  );
} finally {
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  await rm(dataDir, { recursive: true, force: true });
}
