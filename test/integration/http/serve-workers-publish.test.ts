import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts, ROOT } from '../../helpers/processes.ts';

interface Answer {
  status: number;
  location: string | undefined;
  cookie: string | undefined;
  text: string;
}

/** One HTTP exchange; `agent: false` is a fresh connection (so the cluster may hand it to any worker). */
function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: string; agent: Agent | false }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers, agent: options.agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, location: res.headers.location, cookie: res.headers['set-cookie']?.[0]?.split(';')[0], text }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

/**
 * `veil serve --workers 2` with a version published in the admin portal: the publish is served by
 * one worker, and calls on fresh connections — spread over both workers by the cluster — all
 * follow the new version within a bounded time, without a restart.
 */
describe('veil serve --workers 2: a version published in the portal reaches every worker', () => {
  let dataDir: string;
  let child: ChildProcess;
  let url: string;
  let stderr = '';
  let token: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'veil-workers-'));
    const port = await freePorts(1);
    url = `http://127.0.0.1:${port}`;
    child = spawn(join(ROOT, 'bin/veil'), ['serve', '--workers', '2', '--port', String(port), '--data-dir', dataDir], {
      env: { ...process.env, VEIL_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stderr!.on('data', (d) => (stderr += String(d)));
    for (let i = 0; i < 300; i++) {
      const ok = await send(`${url}/readyz`, { agent: false }).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const secret = (await readFile(join(dataDir, 'dev-client.secret'), 'utf8')).trim();
    const res = await send(`${url}/connect/token`, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: secret }).toString(),
    });
    token = (JSON.parse(res.text) as { access_token: string }).access_token;
  }, 60_000);
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    await rm(dataDir, { recursive: true, force: true });
  });

  /** Protects a Customer.phone on `count` fresh connections: the status of each call. */
  async function protectPhones(count: number): Promise<number[]> {
    const body = JSON.stringify({
      rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: 'ingest' }] }],
      processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: 'Protect' }] }],
      requests: [
        {
          guid: guid(3),
          rightsContext: guid(1),
          processingContext: guid(2),
          instances: [{ className: 'Customer', propertyName: 'phone', value: '+41 79 000 00 00' }],
        },
      ],
    });
    const answers: Answer[] = [];
    for (let i = 0; i < count; i++) {
      answers.push(
        await send(`${url}/transform`, {
          method: 'POST',
          agent: false,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', connection: 'close' },
          body,
        }),
      );
    }
    for (const a of answers.filter((x) => x.status === 200)) expect(a.text).not.toContain('+41 79');
    return answers.map((a) => a.status);
  }

  it('calls on every worker answer per the new version within 5 s of the publish', async () => {
    // the portal session lives in the worker that signed in: the admin keeps one connection
    const admin = new Agent({ keepAlive: true, maxSockets: 1 });
    const secret = (await readFile(join(dataDir, 'dev-client.secret'), 'utf8')).trim();
    const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
    const signIn = await send(`${url}/admin/sign-in`, {
      method: 'POST',
      agent: admin,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form({ kind: 'client', client_id: 'veil-dev', client_secret: secret }),
    });
    expect(signIn.status).toBe(303);
    const cookie = signIn.cookie!;
    const get = (path: string) => send(`${url}${path}`, { agent: admin, headers: { cookie } });
    const overview = await get('/admin');
    expect(overview.status).toBe(200);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(overview.text)![1]!;
    const post = (path: string, fields: Record<string, string>) =>
      send(`${url}${path}`, {
        method: 'POST',
        agent: admin,
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: form({ _csrf: csrf, ...fields }),
      });

    // before: Customer.phone is not configured, on any worker
    expect(new Set(await protectPhones(20))).toEqual(new Set([422]));

    const created = await post('/admin/drafts', { from: 'v1' });
    const draft = /\/admin\/drafts\/([0-9a-f-]{36})/.exec(created.location ?? '')![1]!;
    const text = (await get(`/admin/drafts/${draft}/export`)).text;
    const withPhone = text
      .replace(/^keys:\n/m, 'keys:\n  phone-siv: { type: aes-siv }\n')
      .replace(/^sequences:\n/m, 'sequences:\n  phone-det:\n    steps:\n      - { type: aes-siv, key: phone-siv }\n')
      .replace(/^( *)properties:\n/m, '$1properties:\n$1  phone: { protect: phone-det }\n');
    expect(withPhone).toContain('phone: { protect: phone-det }');
    expect((await post(`/admin/drafts/${draft}/yaml`, { yaml: withPhone })).status).toBe(303);
    const reviewed = /name="reviewed" value="([0-9a-f]{64})"/.exec((await get(`/admin/drafts/${draft}`)).text)![1]!;
    const published = await post(`/admin/drafts/${draft}/publish`, { reviewed });
    expect(published.status, published.text.slice(0, 500)).toBe(303);
    expect(published.location).toContain('done=published');
    const publishedAt = Date.now();
    admin.destroy();

    // after: every call on a fresh connection (the cluster spreads them over both workers) follows
    let statuses: number[] = [];
    while (Date.now() - publishedAt < 10_000) {
      statuses = await protectPhones(20);
      if (statuses.every((s) => s === 200)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(statuses).toEqual(Array(20).fill(200));
    expect(Date.now() - publishedAt).toBeLessThan(5_000);
    // and it stays so
    expect(await protectPhones(20)).toEqual(Array(20).fill(200));
    expect(stderr).not.toContain('cannot run in this process');
  }, 60_000);
});
