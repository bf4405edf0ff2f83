import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Cancellation, Upstream } from '../../src/gateway/upstream.ts';

const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** An upstream that records what it parsed and answers only when told. */
async function upstream(): Promise<{ url: string; parsed: string[]; closed: Promise<void>; answer: () => void }> {
  const parsed: string[] = [];
  let answer = () => {};
  let closed!: () => void;
  const closedP = new Promise<void>((r) => (closed = r));
  const server = http.createServer((req, res) => {
    parsed.push(`${req.method} ${req.url}`);
    req.socket.once('close', () => closed());
    // headers and part of the body: the rest never comes
    answer = () => res.writeHead(200, { 'content-length': '10' }).write('part');
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, parsed, closed: closedP, answer: () => answer() };
}

const request = { method: 'POST', target: '/orders', headers: ['Host', 'app', 'Content-Length', '2'], body: Buffer.from('{}') };

describe('Upstream: an exchange cancelled stops its upstream request', () => {
  it('sends nothing when the exchange was cancelled before', async () => {
    const u = await upstream();
    const cancellation = new Cancellation();
    cancellation.cancel();
    await expect(new Upstream(u.url, { timeoutMs: 5000 }).send(request, cancellation)).rejects.toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
    await new Promise((r) => setTimeout(r, 100));
    expect(u.parsed).toEqual([]);
  });

  it('destroys the request in flight when cancelled: the upstream sees its connection close', async () => {
    const u = await upstream();
    const cancellation = new Cancellation();
    const sent = new Upstream(u.url, { timeoutMs: 5000 }).send(request, cancellation);
    while (u.parsed.length === 0) await new Promise((r) => setTimeout(r, 5));
    cancellation.cancel();
    await expect(sent).rejects.toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
    await u.closed;
  });

  it('answers as usual when not cancelled, and a later cancel cuts the response', async () => {
    const u = await upstream();
    const cancellation = new Cancellation();
    const sent = new Upstream(u.url, { timeoutMs: 5000 }).send(request, cancellation);
    while (u.parsed.length === 0) await new Promise((r) => setTimeout(r, 5));
    u.answer();
    const response = await sent;
    expect(response.statusCode).toBe(200);
    const cut = new Promise<Error>((resolve) => response.once('error', resolve));
    cancellation.cancel();
    expect((await cut).message).toBe('aborted');
    expect(response.complete).toBe(false);
    await u.closed;
  });
});
