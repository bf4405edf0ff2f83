// The upstream application of test/integration/gateway/gateway.test.ts, run as its own process:
//   scripts/node22 test/helpers/gateway-upstream.ts   → prints {"port": N} on stdout
// It records every request exactly as it arrived (method, target, raw headers, raw body bytes),
// readable at GET /__control/received, so a test can prove what the gateway forwarded.
//   POST /customers*, /reveal*: echo. The response body is the request body decoded; the request
//     headers x-respond-status, x-respond-encoding (gzip|br|deflate) and x-respond-type choose its
//     status, coding and Content-Type. It also sends end-to-end headers (X-Upstream, two
//     Set-Cookie, ETag) and hop-by-hop ones that must not reach the caller.
//   GET /static/blob: 256 KiB of fixed pseudo-random bytes;  POST /upload: the raw body echoed.
//   GET /slow: answers after 400 ms.
// Faults (test/integration/gateway/gateway-faults.test.ts):
//   …/hang: reads the request, never answers (the connection stays open).
//   GET /faulty/bad-json: application/json that is not JSON;  /faulty/huge: 64 KiB of JSON with a
//     Content-Length;  /faulty/huge-chunked: the same, chunked;  /faulty/bomb: gzip, 1 KiB on the
//     wire, 1 MiB decoded. Each holds the marker LEAK-MARKER-d41d8 in a selected field.
//   /sec/*: the security suite's and the fuzzer's catch-all (test/security): 200 with a small JSON
//     body naming the request's sequence number.
// Every request gets a sequence number (`seq`, from 1), recorded and sent back in X-Upstream-Seq:
// a request the upstream parsed whose seq never reaches the caller was not the caller's request
// (smuggled). GET /__control/received?since=N returns the records with seq >= N; GET
// /__control/errors the parse errors of the upstream's own parser. UPSTREAM_LENIENT=1 parses with
// Node's insecureHTTPParser (lenient about CL/TE, bare LF, chunk framing): an upstream that reads
// more than it should, so the gateway's framing must leave it nothing to misread.
//   /drop-reused: the first request on a connection is answered 200; a later one on the same
//     (kept-alive) connection is read whole, recorded, and the connection destroyed unanswered, as
//     an application that acted on the request and crashed would.
import { createServer, type IncomingMessage } from 'node:http';
import zlib from 'node:zlib';

interface Received {
  seq: number;
  method: string;
  target: string;
  rawHeaders: string[];
  body: string;
}

const received: Received[] = [];
const parseErrors: { code: string }[] = [];
let seq = 0;
const blob = Buffer.alloc(256 * 1024);
for (let i = 0, x = 7; i < blob.length; i++) blob[i] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24;

function decode(body: Buffer, coding: string | undefined): Buffer {
  if (coding === 'gzip') return zlib.gunzipSync(body);
  if (coding === 'br') return zlib.brotliDecompressSync(body);
  if (coding === 'deflate') return zlib.inflateSync(body);
  return body;
}

function encode(body: Buffer, coding: string | undefined): Buffer {
  if (coding === 'gzip') return zlib.gzipSync(body);
  if (coding === 'br') return zlib.brotliCompressSync(body);
  if (coding === 'deflate') return zlib.deflateSync(body);
  return body;
}

const MARKER = 'LEAK-MARKER-d41d8';
const hugeJson = Buffer.from(JSON.stringify({ email: MARKER, pad: 'x'.repeat(64 * 1024) }));
const bomb = zlib.gzipSync(Buffer.from(JSON.stringify({ email: MARKER, pad: ' '.repeat(1024 * 1024) })));
/** requests served per connection */
const served = new WeakMap<object, number>();

const header = (req: IncomingMessage, name: string) => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

const server = createServer({ insecureHTTPParser: process.env.UPSTREAM_LENIENT === '1' }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const path = (req.url ?? '/').split('?')[0]!;
    if (path === '/__control/received' || path === '/__control/errors') {
      const since = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('since') ?? 0);
      const doc = Buffer.from(JSON.stringify(path === '/__control/errors' ? parseErrors : received.filter((r) => r.seq >= since)));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': doc.length });
      return res.end(doc);
    }
    const n = ++seq;
    received.push({ seq: n, method: req.method ?? '', target: req.url ?? '', rawHeaders: req.rawHeaders, body: body.toString('base64') });
    res.setHeader('X-Upstream-Seq', String(n));
    if (path.startsWith('/sec/')) {
      const doc = Buffer.from(JSON.stringify({ seq: n }));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': doc.length });
      return res.end(doc);
    }
    const earlier = served.get(req.socket) ?? 0;
    served.set(req.socket, earlier + 1);
    if (path.endsWith('/hang')) return;
    if (path === '/drop-reused') {
      if (earlier > 0) return req.socket.destroy();
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 });
      return res.end('ok');
    }
    if (path.startsWith('/faulty/')) {
      const send = (headers: Record<string, string | number>, out: Buffer) => {
        res.writeHead(200, { 'content-type': 'application/json', ...headers });
        res.end(out);
      };
      if (path === '/faulty/bad-json') return send({ 'content-length': 40 }, Buffer.from(`{"email": "${MARKER}", "n": tru`.padEnd(40)));
      if (path === '/faulty/huge') return send({ 'content-length': hugeJson.length }, hugeJson);
      if (path === '/faulty/huge-chunked') {
        res.writeHead(200, { 'content-type': 'application/json' });
        for (let i = 0; i < hugeJson.length; i += 4096) res.write(hugeJson.subarray(i, i + 4096));
        return res.end();
      }
      if (path === '/faulty/bomb') return send({ 'content-length': bomb.length, 'content-encoding': 'gzip' }, bomb);
    }
    if (path.startsWith('/customers') || path.startsWith('/reveal')) {
      const coding = header(req, 'x-respond-encoding');
      const out = encode(decode(body, header(req, 'content-encoding')), coding);
      const status = Number(header(req, 'x-respond-status') ?? 200);
      res.removeHeader('X-Upstream-Seq');
      res.writeHead(status, status === 418 ? 'Short And Stout' : undefined, [
        'X-Upstream-Seq',
        String(n),
        'Content-Type',
        header(req, 'x-respond-type') ?? 'application/json',
        ...(coding ? ['Content-Encoding', coding] : []),
        'Content-Length',
        String(out.length),
        'X-Upstream',
        'echo',
        'Set-Cookie',
        'a=1; Path=/',
        'Set-Cookie',
        'b=2; Path=/',
        'ETag',
        '"v1"',
        'Content-MD5',
        'not-checked',
        'Connection',
        'X-Hop-Resp',
        'X-Hop-Resp',
        'must-not-pass',
        'Keep-Alive',
        'timeout=99',
        'Proxy-Authenticate',
        'Basic realm="upstream"',
      ]);
      return res.end(out);
    }
    if (path === '/static/blob') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': blob.length, etag: '"blob"' });
      return res.end(blob);
    }
    if (path === '/upload') {
      res.writeHead(200, { 'content-type': header(req, 'content-type') ?? 'application/octet-stream' });
      return res.end(body);
    }
    if (path === '/slow') {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 4 });
        res.end('slow');
      }, 400);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain', 'content-length': 9 });
    res.end('not found');
  });
});

server.on('clientError', (e: NodeJS.ErrnoException, socket) => {
  parseErrors.push({ code: e.code ?? 'unknown' });
  socket.destroy();
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as { port: number }).port })}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
