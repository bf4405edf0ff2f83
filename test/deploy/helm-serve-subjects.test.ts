import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASTER_KEY_HEX } from '../helpers/http-service.ts';
import { freePorts, privateBroker, ROOT, waitFor } from '../helpers/processes.ts';
import { personConfig, subjectCall } from '../helpers/subject-config.ts';
import { byComponent, container, kinds, type Workload } from './chart-objects.ts';
import { helmTemplate, type K8sObject } from './kube-tools.ts';

/**
 * Issue 40: the chart lost erasure keys — subject keys in each pod's subjects.db, on an emptyDir.
 * Two `veil serve` processes run with exactly the environment the rendered serve container gets
 * (the image's ENV, the container's env, its Secrets' data) on a configuration that scopes keys to
 * the data subject. Only the broker (a private one: the default topics are its own), the KEK (a
 * test VEIL_MASTER_KEY instead of the KMS settings), the data dir (a temp dir per process), the
 * port and the configuration's path are replaced. A value protected on one unprotects on the other,
 * and on the first after a restart on a new data dir (a replaced pod). With the subject-key store
 * set to local, serve refuses to start (SUBJECT_STORE_NOT_SHARED).
 */
type Secret = K8sObject & { stringData?: Record<string, string> };

/** The image's ENV (Dockerfile), then the container's env and envFrom as Kubernetes resolves them. */
function containerEnvironment(objects: K8sObject[], d: Workload, podName: string): Record<string, string> {
  const image = Object.fromEntries(
    [...readFileSync(join(ROOT, 'Dockerfile'), 'utf8').matchAll(/^ENV ((?:.|\\\n)+?)$/gm)].flatMap((m) =>
      [...m[1]!.matchAll(/(\w+)=(\S+)/g)].map((e) => [e[1]!, e[2]!]),
    ),
  );
  const secrets = new Map((kinds(objects, 'Secret') as Secret[]).map((s) => [s.metadata.name, s.stringData ?? {}]));
  const c = container(d);
  const fromSecrets = Object.assign(
    {},
    ...c.envFrom.map((e) => {
      const data = secrets.get(e.secretRef.name);
      if (!data) throw new Error(`the rendered objects hold no Secret ${e.secretRef.name}`);
      return data;
    }),
  ) as Record<string, string>;
  // env wins over envFrom, as in Kubernetes
  const own = Object.fromEntries(
    c.env.map((e) => {
      if (e.value !== undefined) return [e.name, e.value];
      if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') return [e.name, podName];
      throw new Error(`${e.name}: a value source this test does not resolve`);
    }),
  );
  return { ...image, ...fromSecrets, ...own };
}

describe("the chart's serve pods share subject keys (helm template, two real processes)", () => {
  let broker: Awaited<ReturnType<typeof privateBroker>>;
  let rendered: { env: Record<string, string>; args: string[]; config: string };
  const cleanups: (() => Promise<unknown>)[] = [];

  const render = async (extra: string[]) => {
    const configFile = join(await mkdtemp(join(tmpdir(), 'veil-chart-config-')), 'veil.yaml');
    cleanups.push(() => rm(join(configFile, '..'), { recursive: true, force: true }));
    await writeFile(configFile, personConfig());
    const { objects } = await helmTemplate(undefined, ['--set-file', `config.inline=${configFile}`, ...extra]);
    const [serve] = byComponent(objects, 'serve');
    const [configMap] = kinds(objects, 'ConfigMap') as (K8sObject & { data: Record<string, string> })[];
    return { env: containerEnvironment(objects, serve!, 'veil-serve-7d9f8-abcde'), args: container(serve!).args, config: configMap!.data['veil.yaml']! };
  };

  beforeAll(async () => {
    broker = await privateBroker('chart-serve');
    cleanups.push(() => broker.stop());
    rendered = await render([]);
  }, 600_000);
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  /** One pod's process: the rendered environment, but for the broker, the KEK, the data dir, the port and the configuration's path. */
  async function startPod(r: typeof rendered, expectExit = false): Promise<{ url: string; child: ChildProcess; out: () => string; dataDir: string }> {
    const dataDir = await mkdtemp(join(tmpdir(), 'veil-chart-pod-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const configFile = join(dataDir, '..', `${dataDir.split('/').at(-1)}.yaml`);
    await writeFile(configFile, r.config);
    cleanups.push(() => rm(configFile, { force: true }));
    const port = await freePorts(1);
    const kek = Object.keys(r.env).filter((k) => k.startsWith('VEIL_KMS') || k.startsWith('AWS_'));
    const env = {
      ...Object.fromEntries(Object.entries(r.env).filter(([k]) => !kek.includes(k))),
      KAFKA_BROKERS: broker.brokers,
      VEIL_MASTER_KEY: MASTER_KEY_HEX,
      VEIL_DATA_DIR: dataDir,
      VEIL_PORT: String(port),
      PATH: process.env.PATH!,
    };
    const args = r.args.map((a, i) => (r.args[i - 1] === '--config' ? configFile : a));
    const child = spawn(join(ROOT, 'bin/veil'), args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += String(d)));
    child.stderr!.on('data', (d) => (out += String(d)));
    cleanups.push(async () => void child.kill('SIGKILL'));
    const url = `http://127.0.0.1:${port}`;
    if (!expectExit)
      await waitFor(
        () =>
          fetch(`${url}/readyz`).then(
            (res) => res.ok,
            () => child.exitCode !== null && Promise.reject(new Error(`serve exited: ${out}`)),
          ),
        120_000,
        'serve ready',
      );
    return { url, child, out: () => out, dataDir };
  }

  async function transform(pod: { url: string; dataDir: string }, action: string, values: [string, string][]): Promise<string[]> {
    const secret = readFileSync(join(pod.dataDir, 'dev-client.secret'), 'utf8').trim();
    const token = await fetch(`${pod.url}/connect/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: secret }),
    });
    const { access_token: bearer } = (await token.json()) as { access_token: string };
    const res = await fetch(`${pod.url}/transform`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify(subjectCall(action, [{ subject: 'alice@example.com', values }])),
    });
    const body = (await res.json()) as { responses?: { instances: { value: string }[] }[] };
    expect(res.status, JSON.stringify(body)).toBe(200);
    return body.responses![0]!.instances.map((i) => i.value);
  }

  it('renders serve with the subject-key store on Kafka and an ephemeral data dir, on a shared control store', () => {
    expect(rendered.env).toMatchObject({
      VEIL_SUBJECT_STORE: 'kafka',
      VEIL_DATA_DIR_EPHEMERAL: 'true',
      VEIL_CONTROL_STORE: 'kafka',
      VEIL_DATA_DIR: '/var/lib/veil',
    });
    expect(rendered.config).toContain('scope: subject');
  });

  it('a value protected on one pod unprotects on the other, and on the first after it was replaced (a new, empty data dir)', async () => {
    const a = await startPod(rendered);
    const b = await startPod(rendered);
    const plain: [string, string][] = [
      ['email', 'alice@example.com'],
      ['name', 'Alice Liddell'],
    ];
    const protectedOnA = await transform(a, 'Protect', plain);
    expect(protectedOnA).not.toContain('alice@example.com');
    expect(
      await transform(b, 'Unprotect', [
        ['email', protectedOnA[0]!],
        ['name', protectedOnA[1]!],
      ]),
    ).toEqual(plain.map(([, v]) => v));

    // the pod is replaced: SIGTERM, and a new process on a new emptyDir
    a.child.kill('SIGTERM');
    await waitFor(() => a.child.exitCode !== null, 60_000, 'the first pod to stop');
    const replaced = await startPod(rendered);
    expect(
      await transform(replaced, 'Unprotect', [
        ['email', protectedOnA[0]!],
        ['name', protectedOnA[1]!],
      ]),
    ).toEqual(plain.map(([, v]) => v));
    const protectedOnReplaced = await transform(replaced, 'Protect', plain);
    // AES-SIV is deterministic: the same subject key gives the same email
    expect(protectedOnReplaced[0]).toBe(protectedOnA[0]);
    expect(
      await transform(b, 'Unprotect', [
        ['email', protectedOnReplaced[0]!],
        ['name', protectedOnReplaced[1]!],
      ]),
    ).toEqual(plain.map(([, v]) => v));
  }, 300_000);

  it('with the subject-key store set to local, serve refuses to start: SUBJECT_STORE_NOT_SHARED, not keys lost with the pod', async () => {
    const local = await render(['--set', 'subjectStore=local']);
    expect(local.env.VEIL_SUBJECT_STORE).toBe('local');
    const pod = await startPod(local, true);
    await waitFor(() => pod.child.exitCode !== null, 120_000, 'serve to refuse');
    expect(pod.child.exitCode).toBe(1);
    expect(pod.out()).toMatch(/SUBJECT_STORE_NOT_SHARED/);
    expect(pod.out()).toMatch(/VEIL_CONTROL_STORE=kafka/);
  }, 180_000);
});
