import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROKERS, createTopics, javaConsumeCommitted, kafkaClient, produce, topicsFor } from '../../helpers/kafka.ts';
import { awsKmsEnv, createKmsKey, startMoto, type Moto } from '../../helpers/moto.ts';
import { reviewedHash, signIn } from '../../helpers/portal-client.ts';
import { hashClientSecret } from '../../../src/identity/client-secret.ts';
import { eventually, freePorts, ROOT } from '../../helpers/processes.ts';
import { topicsPipelineYaml } from '../../helpers/pipeline-yaml.ts';
import { probeUntilRefused } from '../../helpers/lease-probe.ts';
import { sampleSum } from '../../helpers/prometheus.ts';

const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

/**
 * The three kinds of veil process on one machine as if on three hosts — a `serve`, a `gateway`
 * and a `stream protect`, each with a data dir of its own — sharing only the Kafka control store
 * and an AWS KMS key (moto_server). One key set in all three; with the KMS stopped, each keeps its
 * keys for their lifetime, then refuses and turns its health red; all recover when it is back.
 */
describe('serve, gateway and stream protect sharing the control store and a KMS', () => {
  const t = topicsFor('three');
  const kafka = kafkaClient('three');
  let moto: Moto;
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  const ports = { upstream: 0, serve: 0, gateway: 0, stream: 0 };
  let env: Record<string, string>;
  let configFile: string;

  const start = (args: string[], dataDir: string, extra: Record<string, string> = {}) => {
    const child = spawn(join(ROOT, 'bin/veil'), [...args, '--config', configFile, '--data-dir', dataDir], {
      env: { ...process.env, VEIL_LOG_LEVEL: 'warn', VEIL_DRAIN_DELAY_MS: '0', ...env, ...extra },
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    children.push(child);
    return child;
  };
  const token = async (client: string, secret: string) =>
    (
      (await (
        await fetch(`http://127.0.0.1:${ports.serve}/connect/token`, {
          method: 'POST',
          body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client, client_secret: secret }),
        })
      ).json()) as { access_token: string }
    ).access_token;
  const tokens = new Map<string, string>();
  const transform = async (action: string, value: string, propertyName = 'email') => {
    const body = {
      rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: 'fraud' }] }],
      processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: action }] }],
      requests: [{ guid: guid(3), rightsContext: guid(1), processingContext: guid(2), instances: [{ className: 'Customer', propertyName, value }] }],
    };
    // a token taken while the keys are usable (signing one is refused with the other keys)
    if (!tokens.has('fraud')) tokens.set('fraud', await token('example-fraud', 'fraud-example-secret'));
    const res = await fetch(`http://127.0.0.1:${ports.serve}/transform`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.get('fraud')}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, value: ((await res.json()) as { responses?: { instances: { value: string }[] }[] }).responses?.[0]?.instances[0]?.value };
  };
  /** a counter of the stream process's /metrics, summed over its labels */
  const streamMetric = async (name: string) => sampleSum(await (await fetch(`http://127.0.0.1:${ports.stream}/metrics`)).text(), name, {});
  /** the control store's reader groups now (each process and command line reads it in one of its own) */
  const controlGroupIds = async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      return new Set((await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith('veil-control-')));
    } finally {
      await admin.disconnect();
    }
  };
  const health = async () =>
    Promise.all(
      [`http://127.0.0.1:${ports.serve}/healthz`, `http://127.0.0.1:${ports.gateway}/_veil/healthz`, `http://127.0.0.1:${ports.stream}/healthz`].map((u) =>
        fetch(u).then(
          (r) => r.status,
          () => 0,
        ),
      ),
    );

  beforeAll(async () => {
    moto = await startMoto();
    const keyId = await createKmsKey(moto.endpoint);
    const first = await freePorts(4);
    Object.assign(ports, { upstream: first, serve: first + 1, gateway: first + 2, stream: first + 3 });
    for (let i = 0; i < 4; i++) dirs.push(await mkdtemp(join(tmpdir(), `veil-three-${i}-`)));
    configFile = join(dirs[3]!, 'config.yaml');
    const publisher = await hashClientSecret('publisher-secret', { N: 1024, r: 8, p: 1 });
    const gateway = (await readFile(join(ROOT, 'examples/gateway/gateway.yaml'), 'utf8'))
      .replace('upstream: http://127.0.0.1:3000', `upstream: http://127.0.0.1:${ports.upstream}`)
      // a portal user who may edit and publish
      .replace(/^  clients:\n/m, `  clients:\n    publisher: { secretHash: '${publisher}', roles: [admin-editor, admin-publisher] }\n`)
      // the race below tells versions apart by which alias each protects, the others passing in
      // clear: the unmapped guard would refuse those (test/security/gateway/gateway-drift.test.ts covers it)
      .replace('  unmapped: { action: refuse }\n', '  unmapped: { action: pass }\n');
    expect(gateway).toContain('publisher: {');
    expect(gateway).toContain('unmapped: { action: pass }');
    await writeFile(
      configFile,
      `${gateway}
pipelines:
${topicsPipelineYaml('customers', t, '    unmapped: pass                 # as the gateway above (test/security/stream/stream-drift.test.ts covers the guard)\n')}`,
    );
    await createTopics(kafka, [t.raw, t.clean, t.dlq], 2);
    env = {
      VEIL_CONTROL_STORE: 'kafka',
      VEIL_CONTROL_TOPIC: `veil.control.three.${randomBytes(4).toString('hex')}`,
      KAFKA_BROKERS: BROKERS.join(','),
      ...awsKmsEnv(moto.endpoint, keyId, 4),
      VEIL_BASE_URL: `http://127.0.0.1:${ports.serve}`,
    };
    const app = spawn(join(ROOT, 'scripts/node22'), [join(ROOT, 'examples/gateway/upstream.ts'), String(ports.upstream)], { stdio: 'ignore' });
    children.push(app);
    // the first process makes the keys; the others find them in the store
    start(['serve', '--port', String(ports.serve)], dirs[0]!);
    await eventually('serve', async () => ((await fetch(`http://127.0.0.1:${ports.serve}/readyz`)).ok ? true : undefined), 60_000);
    start(['gateway', '--port', String(ports.gateway)], dirs[1]!);
    // one protection thread: the KMS test's probes show when its own lease lapsed
    start(['stream', 'protect', '--port', String(ports.stream)], dirs[2]!, { VEIL_PROTECT_THREADS: '1' });
    await eventually('all healthy', async () => ((await health()).every((s) => s === 200) ? true : undefined), 60_000);
  }, 240_000);
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    moto?.resume();
    await moto?.stop();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('one key set: what the gateway and the stream protect, serve unprotects; equal emails protect equally in all three', async () => {
    const ingest = await token('example-ingest', 'ingest-example-secret');
    const posted = await fetch(`http://127.0.0.1:${ports.gateway}/customers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ingest}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Ada', email: 'ada@example.com', card: { number: '4111-1111-1111-1111' }, contacts: [], plan: 'gold' }),
    });
    expect(posted.status).toBe(201);
    const stored = (await (await fetch(`http://127.0.0.1:${ports.upstream}/customers/1`)).json()) as { email: string };
    expect(stored.email).not.toBe('ada@example.com');
    expect(await transform('Unprotect', stored.email)).toMatchObject({ status: 200, value: 'ada@example.com' });
    await produce(kafka, t.raw, [{ key: 'k', value: JSON.stringify({ id: 1, email: 'ada@example.com' }) }]);
    const clean = await eventually('the clean record', async () => (await javaConsumeCommitted(t.clean))[0]);
    expect((JSON.parse(clean.value) as { email: string }).email).toBe(stored.email);
    expect((await transform('Protect', 'ada@example.com')).value).toBe(stored.email);
  }, 60_000);

  it("a version published in serve's portal runs in all three within 2 s; a key rotated from a fourth data dir is used by all three", async () => {
    const ingest = await token('example-ingest', 'ingest-example-secret');
    const postCustomer = (body: Record<string, unknown>) =>
      fetch(`http://127.0.0.1:${ports.gateway}/customers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ingest}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Eve', contacts: [], ...body }),
      });
    const stored = async (id: number) => (await (await fetch(`http://127.0.0.1:${ports.upstream}/customers/${id}`)).json()) as { email: string; plan: string };
    // the clean topic as it fills, and a record a quarter second produced with a plan to protect
    const clean: { id: number; plan: string; email: string }[] = [];
    const reader = kafka.consumer({ groupId: `three-reader-${randomBytes(4).toString('hex')}` });
    await reader.connect();
    await reader.subscribe({ topic: t.clean, fromBeginning: true });
    await reader.run({ eachMessage: async ({ message }) => void clean.push(JSON.parse(message.value!.toString())) });
    const sentAt = new Map<number, number>();
    let ticking = true;
    const ticks = (async () => {
      for (let id = 100; ticking; id++) {
        sentAt.set(id, Date.now());
        await produce(kafka, t.raw, [{ key: 'tick', value: JSON.stringify({ id, email: `t${id}@example.com`, plan: 'gold' }) }]);
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    try {
      expect((await transform('Protect', 'gold', 'plan')).status).toBe(422);
      await eventually('ticks flowing', async () => (clean.some((r) => r.id >= 100) ? true : undefined), 30_000);
      expect(clean.filter((r) => r.id >= 100).every((r) => r.plan === 'gold')).toBe(true);

      // the new version: Customer.plan configured, the gateway's create route and the pipeline protect it
      const text = (await readFile(configFile, 'utf8'))
        .replace(
          '      email: { protect: email-deterministic }\n',
          '      email: { protect: email-deterministic }\n      plan: { protect: email-deterministic }\n',
        )
        .replace(
          '      request:\n        - { select: email, field: Customer.email }\n',
          '      request:\n        - { select: email, field: Customer.email }\n        - { select: plan, field: Customer.plan }\n',
        )
        .replace(
          'fields: [ { path: email, field: Customer.email } ]',
          'fields: [ { path: email, field: Customer.email }, { path: plan, field: Customer.plan } ]',
        );
      expect(text.match(/Customer\.plan/g)).toHaveLength(2);
      const portal = await signIn(`http://127.0.0.1:${ports.serve}`, 'publisher');
      const draft = /\/admin\/drafts\/([0-9a-f-]{36})/.exec((await portal.post('/admin/drafts', { yaml: text })).location ?? '')?.[1];
      expect(draft).toBeDefined();
      const published = await portal.publish(draft!);
      expect(published.location).toContain('done=published');
      const publishedAt = Date.now();

      const goldProtected = await eventually(
        'serve protecting Customer.plan',
        async () => {
          const r = await transform('Protect', 'gold', 'plan');
          return r.status === 200 ? r.value : undefined;
        },
        10_000,
      );
      const serveAt = Date.now();
      let n = 10;
      const gatewayAt = await eventually(
        'the gateway protecting plan',
        async () => {
          const res = await postCustomer({ email: `g${n}@example.com`, plan: 'gold' });
          const id = ((await res.json()) as { id: number }).id;
          n++;
          return (await stored(id)).plan === goldProtected ? Date.now() : undefined;
        },
        10_000,
      );
      // the first tick the stream protected under the new version, by when it was produced
      const first = await eventually('the stream protecting plan', async () => clean.find((r) => r.id >= 100 && r.plan !== 'gold'), 20_000);
      const streamAt = sentAt.get(first.id)!;
      expect(first.plan).toBe(goldProtected);
      // the switch happens between batches: no record after the first protected one is left in clear
      const ticksAfter = clean.filter((r) => r.id > first.id);
      expect(ticksAfter.every((r) => r.plan === goldProtected)).toBe(true);
      for (const [who, at] of [
        ['serve', serveAt],
        ['gateway', gatewayAt],
        ['stream', streamAt],
      ] as const)
        expect(at - publishedAt, who).toBeLessThan(2_000);

      // a key rotated from a fourth data dir (another host's CLI): all three protect under version 2
      const versionOf = (value: string) => Buffer.from(value, 'base64url').readUInt32BE(1);
      const rotated = await new Promise<string>((resolve, reject) => {
        const cli = spawn(join(ROOT, 'bin/veil'), ['keys', 'rotate', '--id', 'customer-siv', '--data-dir', dirs[3]!], { env: { ...process.env, ...env } });
        let out = '';
        cli.stdout.on('data', (d) => (out += String(d)));
        cli.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`keys rotate exited ${code}`))));
      });
      expect(rotated).toMatch(/version 2 is primary/);
      const rotatedAt = Date.now();
      const v2 = await eventually(
        'serve under customer-siv v2',
        async () => {
          const r = await transform('Protect', 'gold', 'plan');
          return versionOf(r.value!) === 2 ? r.value : undefined;
        },
        10_000,
      );
      await eventually(
        'the gateway under v2',
        async () => {
          const res = await postCustomer({ email: `r${n}@example.com`, plan: 'gold' });
          const id = ((await res.json()) as { id: number }).id;
          n++;
          return (await stored(id)).plan === v2 ? true : undefined;
        },
        10_000,
      );
      const firstV2 = await eventually('the stream under v2', async () => clean.find((r) => r.id >= 100 && r.plan === v2), 20_000);
      expect(sentAt.get(firstV2.id)! - rotatedAt).toBeLessThan(5_000);
      // what each host protected under either version, serve reads
      expect(await transform('Unprotect', goldProtected, 'plan')).toMatchObject({ status: 200, value: 'gold' });
      expect(await transform('Unprotect', firstV2.email)).toMatchObject({ status: 200, value: `t${firstV2.id}@example.com` });
    } finally {
      ticking = false;
      await ticks;
      await reader.disconnect();
    }
  }, 120_000);

  it("three publishers racing (serve's portal and the command line on two more data dirs) leave serve, gateway and stream on the same active version", async () => {
    const base = await readFile(configFile, 'utf8');
    const names = ['alias1', 'alias2', 'alias3'];
    // each racing version configures its own property, protected by the gateway's create route and by the pipeline
    const text = (name: string) =>
      base
        .replace(
          '      email: { protect: email-deterministic }\n',
          `      email: { protect: email-deterministic }\n      ${name}: { protect: email-deterministic }\n`,
        )
        .replace(
          '      request:\n        - { select: email, field: Customer.email }\n',
          `      request:\n        - { select: email, field: Customer.email }\n        - { select: ${name}, field: Customer.${name} }\n`,
        )
        .replace(
          'fields: [ { path: email, field: Customer.email } ]',
          `fields: [ { path: email, field: Customer.email }, { path: ${name}, field: Customer.${name} } ]`,
        );
    const cliDirs = [dirs[3]!, await mkdtemp(join(tmpdir(), 'veil-three-cli-'))];
    dirs.push(cliDirs[1]!);
    const files = await Promise.all(
      names.map(async (n) => {
        const f = join(cliDirs[0]!, `${n}.yaml`);
        await writeFile(f, text(n));
        return f;
      }),
    );
    const portal = await signIn(`http://127.0.0.1:${ports.serve}`, 'publisher');
    const draft = /\/admin\/drafts\/([0-9a-f-]{36})/.exec((await portal.post('/admin/drafts', { yaml: text(names[0]!) })).location ?? '')![1]!;
    const reviewed = reviewedHash((await portal.get(`/admin/drafts/${draft}`)).text)!;
    const publishCli = (file: string, dataDir: string) =>
      new Promise<string>((resolve, reject) => {
        const cli = spawn(join(ROOT, 'bin/veil'), ['config', 'publish', file, '--data-dir', dataDir], { env: { ...process.env, ...env } });
        let out = '';
        cli.stdout.on('data', (d) => (out += String(d)));
        cli.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`config publish exited ${code}`))));
      });
    // the command lines take a moment to read the store: the portal's publish goes out once both have
    // opened it (each reads it in a group of its own, veil-control-*), or written already
    const controlGroups = await controlGroupIds();
    const clis = [publishCli(files[1]!, cliDirs[0]!), publishCli(files[2]!, cliDirs[1]!)].map((run) => {
      const cli = { done: false, run };
      void run.finally(() => (cli.done = true)).catch(() => undefined);
      return cli;
    });
    const opened = new Set<string>();
    const portalPublish = eventually(
      'both command lines reading the store',
      async () => {
        for (const g of await controlGroupIds()) if (!controlGroups.has(g)) opened.add(g);
        return opened.size >= 2 || clis.every((c) => c.done) ? true : undefined;
      },
      60_000,
    ).then(() => portal.post(`/admin/drafts/${draft}/publish`, { reviewed }));
    const [outA, outB, posted] = await Promise.all([clis[0]!.run, clis[1]!.run, portalPublish]);
    expect(posted.location).toContain('done=published');
    const numbers = [outA, outB].map((o) => Number(/as version (\d+)/.exec(o)![1]));
    expect(new Set(numbers).size).toBe(2);
    const portalNumber = Number(/[?&]to=v(\d+)/.exec(posted.location!)![1]);

    // the newest version wins everywhere: find it in serve's data dir, then check each process runs it
    const newest = Math.max(...numbers, portalNumber);
    await eventually('serve mirrored all three versions', async () =>
      (JSON.parse(await readFile(join(dirs[0]!, 'config-versions/index.json'), 'utf8')) as { active: number }).active >= newest ? true : undefined,
    );
    const index = JSON.parse(await readFile(join(dirs[0]!, 'config-versions/index.json'), 'utf8')) as { active: number };
    const activeText = await readFile(join(dirs[0]!, `config-versions/${String(index.active).padStart(4, '0')}.yaml`), 'utf8');
    expect(index.active).toBe(newest);
    const winner = names.find((n) => activeText.includes(`${n}: { protect: email-deterministic }`))!;
    expect(winner).toBeDefined();
    const ingest = await token('example-ingest', 'ingest-example-secret');
    const plainOf = (id: number) => Object.fromEntries(names.map((n) => [n, `${n}-${id}@example.com`]));
    const protectedOnly = (got: Record<string, string>, id: number) => names.filter((n) => got[n] !== plainOf(id)[n]);
    await eventually('serve on the newest version', async () => ((await transform('Protect', 'x', winner)).status === 200 ? true : undefined), 10_000);
    for (const n of names.filter((x) => x !== winner)) expect((await transform('Protect', 'x', n)).status).toBe(422);
    let id = 500;
    await eventually(
      'the gateway on the newest version',
      async () => {
        const res = await fetch(`http://127.0.0.1:${ports.gateway}/customers`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ingest}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'Race', email: 'race@example.com', contacts: [], ...plainOf(id) }),
        });
        const stored = (await (await fetch(`http://127.0.0.1:${ports.upstream}/customers/${((await res.json()) as { id: number }).id}`)).json()) as Record<
          string,
          string
        >;
        const only = protectedOnly(stored, id++);
        return only.length === 1 && only[0] === winner ? true : undefined;
      },
      10_000,
    );
    await eventually(
      'the stream on the newest version',
      async () => {
        const rid = id++;
        await produce(kafka, t.raw, [{ key: 'race', value: JSON.stringify({ id: rid, email: 'race@example.com', ...plainOf(rid) }) }]);
        const got = await eventually(
          'its clean record',
          async () =>
            (await javaConsumeCommitted(t.clean)).map((r) => JSON.parse(r.value) as Record<string, string> & { id: number }).find((r) => r.id === rid),
          20_000,
        );
        const only = protectedOnly(got, rid);
        return only.length === 1 && only[0] === winner ? true : undefined;
      },
      40_000,
    );
    console.log(
      `racing publishes: command lines got versions ${numbers.join(' and ')}, the portal's landed too; active everywhere: ${index.active} (${winner})`,
    );
  }, 120_000);

  it('the KMS stopped: keys serve for their lifetime, then every process refuses and turns red; all recover when it is back', async () => {
    const ingest = await token('example-ingest', 'ingest-example-secret');
    const post = () =>
      fetch(`http://127.0.0.1:${ports.gateway}/customers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ingest}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Bob', email: 'bob@example.com', contacts: [] }),
      }).then((r) => r.status);
    await transform('Protect', 'warm@example.com');
    const customers = async () => ((await (await fetch(`http://127.0.0.1:${ports.upstream}/customers`)).json()) as unknown[]).length;
    const cleanBefore = (await javaConsumeCommitted(t.clean)).length;
    const customersBefore = await customers();
    let probes = { passed: [] as number[], refused: -1 };
    moto.pause();
    try {
      const paused = Date.now();
      await eventually('all red', async () => ((await health()).every((s) => s === 503) ? true : undefined), 30_000);
      expect(Date.now() - paused).toBeGreaterThanOrEqual(2_500);
      // the protection thread's own lease, renewed on its own clock, lapses too: probes (on the key of
      // the record below, so on its partition) pass until then
      const record = (id: number) => ({ key: 'k', value: JSON.stringify({ id, email: 'bob@example.com' }) });
      probes = await probeUntilRefused({
        firstId: 900,
        send: (id) => produce(kafka, t.raw, [record(id)]),
        committed: () => streamMetric('veil_stream_records_in_total'),
        aborted: () => streamMetric('veil_stream_batch_retries_total'),
      });
      expect((await transform('Protect', 'ada@example.com')).status).toBe(503);
      expect(await post()).toBe(503);
      expect(await customers()).toBe(customersBefore);
      await produce(kafka, t.raw, [record(2)]);
      // the partition's batch read again twice after it, so once with it, and refused: nothing written
      const retries = await streamMetric('veil_stream_batch_retries_total');
      await eventually(
        'the batch with the record refused',
        async () => ((await streamMetric('veil_stream_batch_retries_total')) >= retries + 2 ? true : undefined),
        30_000,
      );
      expect(await javaConsumeCommitted(t.clean)).toHaveLength(cleanBefore + probes.passed.length);
    } finally {
      moto.resume();
    }
    await eventually('all green', async () => ((await health()).every((s) => s === 200) ? true : undefined), 60_000);
    expect((await transform('Protect', 'ada@example.com')).status).toBe(200);
    expect(await post()).toBe(201);
    const clean = await eventually(
      'the records held back',
      async () => {
        const got = await javaConsumeCommitted(t.clean);
        return got.length >= cleanBefore + probes.passed.length + 2 ? got : undefined;
      },
      60_000,
    );
    const ids = clean.map((r) => (JSON.parse(r.value) as { id: number }).id);
    expect(ids.filter((id) => id < 100).sort()).toEqual([1, 2]);
    expect(ids.filter((id) => id >= 900 && id < 1000).sort((a, b) => a - b)).toEqual([...probes.passed, probes.refused]);
  }, 180_000);
});
