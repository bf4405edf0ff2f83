// `veil serve` as its own process for the security tests: a configuration file outside the data
// dir, a fresh data dir, a free port, and plain HTTP(S) requests that keep every header.
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, ROOT } from './processes.ts';
import { MASTER_KEY_HEX } from './http-service.ts';

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export interface VeilProcess {
  url: string;
  dataDir: string;
  child: ChildProcess;
  output(): string;
  /** one request with exactly these headers (HTTPS: the test's self-signed certificate is trusted) */
  request(path: string, options?: { method?: string; headers?: Record<string, string>; body?: string }): Promise<Answer>;
  stop(): Promise<void>;
}

/** `dataDir`: start on this data dir (a restart) and leave it in place on stop; else a fresh one, removed on stop. */
export async function startVeilServe(options: {
  configText: string;
  https?: { ca: Buffer };
  env?: Record<string, string>;
  dataDir?: string;
}): Promise<VeilProcess> {
  const configDir = await mkdtemp(join(tmpdir(), 'veil-sec-config-'));
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'veil-sec-data-')));
  const configFile = join(configDir, 'config.yaml');
  await writeFile(configFile, options.configText);
  const port = await freePorts(1);
  const url = `${options.https ? 'https' : 'http'}://127.0.0.1:${port}`;
  const child = spawn(join(ROOT, 'bin/veil'), ['serve', '--config', configFile, '--data-dir', dataDir, '--port', String(port)], {
    env: { ...process.env, VEIL_MASTER_KEY: MASTER_KEY_HEX, VEIL_LOG_LEVEL: 'warn', VEIL_BASE_URL: url, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (out += String(d)));
  const request: VeilProcess['request'] = (path, o = {}) =>
    new Promise((resolve, reject) => {
      const send = options.https ? httpsRequest : httpRequest;
      const req = send(`${url}${path}`, { method: o.method ?? 'GET', headers: o.headers ?? {}, ...(options.https ? { ca: options.https.ca } : {}) }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(o.body);
    });
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`veil serve exited: ${out}`);
    try {
      if ((await request('/readyz')).status === 200) break;
    } catch {
      /* not yet */
    }
    if (i > 300) throw new Error(`veil serve did not become ready: ${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    dataDir,
    child,
    request,
    output: () => out,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      if (!options.dataDir) await rm(dataDir, { recursive: true, force: true });
      await rm(configDir, { recursive: true, force: true });
    },
  };
}

/** A portal client over a VeilProcess: signs in with a client's credentials, then GET/POST with cookie and CSRF token. */
export async function portalSession(veil: VeilProcess, clientId: string, secret = `${clientId}-secret`) {
  const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
  const res = await veil.request('/admin/sign-in', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form({ kind: 'client', client_id: clientId, client_secret: secret }),
  });
  if (res.status !== 303) throw new Error(`sign-in of ${clientId}: ${res.status}`);
  const cookie = String(res.headers['set-cookie']![0]).split(';')[0]!;
  const overview = await veil.request('/admin', { headers: { cookie } });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(overview.text)![1]!;
  return {
    cookie,
    csrf,
    setCookie: String(res.headers['set-cookie']![0]),
    get: (path: string) => veil.request(path, { headers: { cookie } }),
    post: (path: string, fields: Record<string, string>) =>
      veil.request(path, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: form({ _csrf: csrf, ...fields }) }),
  };
}

export type PortalSession = Awaited<ReturnType<typeof portalSession>>;

/** The draft id in a 303 to /admin/drafts/<id>. */
export const draftIdOf = (answer: Answer) => /\/admin\/drafts\/([0-9a-f-]{36})/.exec(String(answer.headers.location ?? ''))?.[1];
