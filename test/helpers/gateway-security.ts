// The adversarial gateway suite's fixture (test/security/gateway/gateway-*.test.ts, the fuzzer): a real
// `bin/veil gateway` process in front of the recording upstream (test/helpers/gateway-upstream.ts,
// lenient parser), tokens signed with the data dir's signing key, and a raw-socket client that
// sends bytes exactly as given and reads whatever comes back.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngine } from '../../src/app/open-engine.ts';
import { JwtSigner } from '../../src/keystore/jwt-signer.ts';
import { spawnGatewayUpstream } from './gateway-upstream-process.ts';
import { freePorts, ROOT, sigtermAndWait, waitFor } from './processes.ts';

export const MASTER_KEY = 'c'.repeat(64);
export const ISSUER = 'http://veil.test';
/** cleartexts of protected fields the suite sends; none may reach the upstream on a protecting route */
export const SECRET_EMAIL = 'smuggled@example.com';
export const SECRET_CARD = '4111-1111-1111-1111';

export interface Recorded {
  seq: number;
  method: string;
  target: string;
  rawHeaders: string[];
  /** base64 */
  body: string;
}

export interface SecurityFixture {
  url: string;
  port: number;
  upstreamUrl: string;
  dataDir: string;
  configFile: string;
  tokens: Record<string, string>;
  output(): string;
  /** what the upstream parsed since seq `since` */
  received(since?: number): Promise<Recorded[]>;
  /** the highest seq so far (0: none) */
  lastSeq(): Promise<number>;
  /** the upstream's own parse errors */
  upstreamErrors(): Promise<{ code: string }[]>;
  /** stops the gateway (SIGTERM: it drains) and waits for its exit: nothing more reaches the upstream from it */
  stopGateway(): Promise<void>;
  /** starts another gateway on the same upstream and data dir with another gateway section */
  another(gatewaySection: string): Promise<{ url: string; port: number; stop(): void }>;
  close(): Promise<void>;
}

/** The engine sections of config/example.yaml and `gateway:` + the given section, upstream filled in. */
export async function configText(upstreamUrl: string, gatewaySection: string): Promise<string> {
  const engine = await readFile(join(ROOT, 'config/example.yaml'), 'utf8');
  return `${engine}\ngateway:\n  upstream: ${upstreamUrl}\n${gatewaySection}`;
}

export async function startGatewayProcess(
  configFile: string,
  dataDir: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; port: number; output: () => string }> {
  const port = await freePorts(1);
  const child = spawn(join(ROOT, 'bin/veil'), ['gateway', '--config', configFile, '--data-dir', dataDir, '--port', String(port)], {
    env: { ...process.env, VEIL_MASTER_KEY: MASTER_KEY, VEIL_BASE_URL: ISSUER, VEIL_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (out += String(d)));
  const scheme = env.GATEWAY_SCHEME ?? 'http';
  const url = `${scheme}://127.0.0.1:${port}`;
  if (scheme === 'http')
    await waitFor(async () => (await fetch(`${url}/_veil/healthz`).catch(() => undefined))?.status === 200, 30_000, `the gateway (${out})`);
  return { child, url, port, output: () => out };
}

/** Upstream, keys, tokens (ingest, support, fraud, nobody) and a gateway with `gatewaySection` (indented two spaces). */
export async function securityFixture(gatewaySection: string): Promise<SecurityFixture> {
  const dataDir = await mkdtemp(join(tmpdir(), 'veil-gateway-sec-'));
  const { child: upstream, url: upstreamUrl } = await spawnGatewayUpstream({ lenient: true });
  const configFile = join(dataDir, 'gateway.yaml');
  await writeFile(configFile, await configText(upstreamUrl, gatewaySection));
  const { keystore } = await openEngine({ configFile, dataDir, env: { VEIL_MASTER_KEY: MASTER_KEY }, now: () => new Date(), provision: true });
  await keystore.create('veil-token-signing', 'jwt-es256');
  const signer = new JwtSigner(keystore, 'veil-token-signing');
  const iat = Math.floor(Date.now() / 1000);
  const tokens: Record<string, string> = {};
  for (const [who, roles] of Object.entries({ ingest: ['ingest'], support: ['support'], fraud: ['fraud'], nobody: [] as string[] })) {
    tokens[who] = await signer.sign({ iss: ISSUER, sub: who, aud: 'veil', iat, nbf: iat, exp: iat + 3600, client_id: who, roles }, 'at+jwt');
  }
  const gateway = await startGatewayProcess(configFile, dataDir);
  const others: ChildProcess[] = [];
  const received = async (since = 0) => (await (await fetch(`${upstreamUrl}/__control/received?since=${since}`)).json()) as Recorded[];
  return {
    url: gateway.url,
    port: gateway.port,
    upstreamUrl,
    dataDir,
    configFile,
    tokens,
    output: gateway.output,
    received,
    lastSeq: async () => (await received(0)).at(-1)?.seq ?? 0,
    upstreamErrors: async () => (await (await fetch(`${upstreamUrl}/__control/errors`)).json()) as { code: string }[],
    async stopGateway() {
      if (gateway.child.exitCode !== null || gateway.child.signalCode !== null) return;
      const { code } = await sigtermAndWait(gateway.child, 30_000);
      if (code === 'timeout') throw new Error('the gateway did not exit within 30 s of SIGTERM');
    },
    async another(section) {
      const file = join(dataDir, `gateway-${others.length}.yaml`);
      await writeFile(file, await configText(upstreamUrl, section));
      const g = await startGatewayProcess(file, dataDir);
      others.push(g.child);
      return { url: g.url, port: g.port, stop: () => g.child.kill('SIGKILL') };
    },
    async close() {
      for (const child of [gateway.child, upstream, ...others]) if (child.exitCode === null) child.kill('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** What came back on one raw connection: the bytes, and the responses' status lines, seqs and problem codes. */
export interface RawReply {
  text: string;
  statuses: number[];
  /** final (non-1xx) responses received in whole: their Content-Length, their last chunk, or the close */
  complete: number;
  /** X-Upstream-Seq of every relayed upstream response */
  seqs: number[];
  codes: string[];
  closed: boolean;
}

/**
 * Writes `bytes` (a string is sent as latin1, byte for byte) on a fresh connection, in `parts` if
 * given (with `gapMs` between them), and reads until the gateway closes the connection or nothing
 * arrives for `idleMs`.
 */
export function rawSend(
  port: number,
  bytes: string | Buffer | (string | Buffer)[],
  options: { idleMs?: number; gapMs?: number; maxMs?: number; expect?: number; settleMs?: number } = {},
): Promise<RawReply> {
  const parts = (Array.isArray(bytes) ? bytes : [bytes]).map((b) => (typeof b === 'string' ? Buffer.from(b, 'latin1') : b));
  const idleMs = options.idleMs ?? 400;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let closed = false;
    let idle: NodeJS.Timeout | undefined;
    const socket = net.connect(port, '127.0.0.1');
    const done = () => {
      clearTimeout(idle);
      clearTimeout(cap);
      socket.destroy();
      resolve(parseReplies(Buffer.concat(chunks).toString('latin1'), closed));
    };
    // once the `expect` responses came in whole, only `settleMs` more for any response beyond them
    let settled = false;
    const rearm = () => {
      clearTimeout(idle);
      idle = setTimeout(done, settled ? (options.settleMs ?? 200) : idleMs);
    };
    const cap = setTimeout(done, options.maxMs ?? 10_000);
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (options.expect !== undefined && !settled) settled = parseReplies(Buffer.concat(chunks).toString('latin1'), false).complete >= options.expect;
      rearm();
    });
    socket.on('end', () => {
      closed = true;
      done();
    });
    socket.on('error', () => {
      closed = true;
      done();
    });
    socket.on('connect', async () => {
      for (const [i, p] of parts.entries()) {
        if (i > 0 && options.gapMs) await new Promise((r) => setTimeout(r, options.gapMs));
        if (socket.destroyed) return;
        socket.write(p);
      }
      rearm();
    });
  });
}

/** Splits the bytes into responses by their own framing (1xx, Content-Length, chunked, or to the close). */
export function parseReplies(text: string, closed: boolean): RawReply {
  const out: RawReply = { text, statuses: [], seqs: [], codes: [], closed, complete: 0 };
  let p = 0;
  while (p < text.length) {
    const end = text.indexOf('\r\n\r\n', p);
    const m = /^HTTP\/1\.1 (\d{3})/.exec(text.slice(p, p + 12));
    if (end === -1 || !m) break;
    const status = Number(m[1]);
    const head = text.slice(p, end + 2);
    out.statuses.push(status);
    const seq = /\r\nX-Upstream-Seq: (\d+)\r\n/i.exec(head);
    if (seq) out.seqs.push(Number(seq[1]));
    p = end + 4;
    if (status < 200) continue;
    const length = /\r\ncontent-length: (\d+)\r\n/i.exec(head);
    let body = '';
    if (length) {
      body = text.slice(p, p + Number(length[1]));
      p += Number(length[1]);
      if (p <= text.length) out.complete++;
    } else if (/\r\ntransfer-encoding: chunked\r\n/i.test(head)) {
      for (;;) {
        const line = text.indexOf('\r\n', p);
        if (line === -1) return out;
        const size = parseInt(text.slice(p, line), 16);
        p = line + 2;
        if (!(size > 0)) {
          const last = text.indexOf('\r\n\r\n', p - 2);
          if (last === -1) return out;
          p = last + 4;
          out.complete++;
          break;
        }
        body += text.slice(p, p + size);
        p += size + 2;
      }
    } else {
      body = text.slice(p);
      p = text.length;
      if (closed) out.complete++;
    }
    const code = /"code":"([A-Z_]+)"/.exec(body);
    if (code && /^content-type: application\/problem\+json/im.test(head)) out.codes.push(code[1]!);
  }
  return out;
}

export const bodyOf = (r: Recorded) => Buffer.from(r.body, 'base64').toString('latin1');
export const headerOf = (r: Recorded, name: string) => {
  const i = r.rawHeaders.findIndex((h, k) => k % 2 === 0 && h.toLowerCase() === name);
  return i === -1 ? undefined : r.rawHeaders[i + 1];
};
export const headerNames = (r: Recorded) => r.rawHeaders.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase());
