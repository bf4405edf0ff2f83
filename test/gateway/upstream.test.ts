import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Upstream } from '../../src/gateway/upstream.ts';

/** An upstream that never answers and tells when each request's connection closed. */
let server: http.Server;
let closed: string[];
let arrived: string[];
beforeEach(async () => {
  closed = [];
  arrived = [];
  server = http.createServer((req) => {
    arrived.push(req.url!);
    req.socket.once('close', () => closed.push(req.url!));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
});
afterEach(async () => {
  server.closeAllConnections();
  server.close();
});

const url = () => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const until = async (check: () => boolean) => {
  for (const deadline = Date.now() + 5_000; !check(); await new Promise((r) => setTimeout(r, 10))) if (Date.now() > deadline) throw new Error('timed out');
};

describe('Upstream: the caller going away cuts the upstream request', () => {
  it("destroys a request in flight when the exchange's signal aborts: the upstream sees its connection close", async () => {
    const upstream = new Upstream(url(), { timeoutMs: 30_000 });
    const controller = new AbortController();
    const sent = upstream.send({ method: 'GET', target: '/held', headers: ['Host', 'x'], body: undefined }, controller.signal);
    await until(() => arrived.includes('/held'));
    controller.abort();
    await expect(sent).rejects.toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
    await until(() => closed.includes('/held'));
    upstream.close();
  });

  it('cuts a streamed body mid-way: the upstream sees a truncated request on a closed connection', async () => {
    const upstream = new Upstream(url(), { timeoutMs: 30_000 });
    const controller = new AbortController();
    const body = new PassThrough();
    const sent = upstream.send({ method: 'POST', target: '/streamed', headers: ['Host', 'x', 'Content-Length', '100'], body }, controller.signal);
    body.write('0123456789');
    await until(() => arrived.includes('/streamed'));
    controller.abort();
    await expect(sent).rejects.toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
    await until(() => closed.includes('/streamed'));
    upstream.close();
  });

  it('sends nothing for a signal already aborted, and leaves no listener on a signal that outlives its requests', async () => {
    const upstream = new Upstream(url(), { timeoutMs: 30_000 });
    await expect(upstream.send({ method: 'GET', target: '/late', headers: ['Host', 'x'], body: undefined }, AbortSignal.abort())).rejects.toMatchObject({
      code: 'UPSTREAM_TIMEOUT',
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(arrived).not.toContain('/late');
    // a long-lived signal: each finished request removes its listener
    const longLived = new AbortController();
    let listeners = 0;
    const add = longLived.signal.addEventListener.bind(longLived.signal);
    const remove = longLived.signal.removeEventListener.bind(longLived.signal);
    longLived.signal.addEventListener = ((...a: Parameters<typeof add>) => {
      listeners++;
      add(...a);
    }) as typeof add;
    longLived.signal.removeEventListener = ((...a: Parameters<typeof remove>) => {
      listeners--;
      remove(...a);
    }) as typeof remove;
    const quick = http.createServer((_req, res) => res.end('ok'));
    quick.listen(0, '127.0.0.1');
    await once(quick, 'listening');
    const fast = new Upstream(`http://127.0.0.1:${(quick.address() as AddressInfo).port}`, { timeoutMs: 30_000 });
    for (let i = 0; i < 5; i++) {
      const res = await fast.send({ method: 'GET', target: `/q${i}`, headers: ['Host', 'x'], body: undefined }, longLived.signal);
      res.resume();
      await once(res, 'end');
    }
    await until(() => listeners === 0);
    fast.close();
    quick.close();
    upstream.close();
  });
});
