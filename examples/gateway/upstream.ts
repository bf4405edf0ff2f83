// The application behind the gateway in examples/gateway: a tiny customer store veil does not own.
// It keeps whatever JSON it is sent, so what it holds shows what the gateway let through.
//   scripts/node22 examples/gateway/upstream.ts [port]      (default 3000)
import { createServer } from 'node:http';

const port = Number(process.argv[2] ?? process.env.PORT ?? 3000);
const customers = new Map<string, Record<string, unknown>>();

const server = createServer((req, res) => {
  const send = (status: number, doc: unknown) => {
    const body = JSON.stringify(doc);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const path = (req.url ?? '/').split('?')[0]!;
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (req.method === 'POST' && path === '/customers') {
      let customer: Record<string, unknown>;
      try {
        customer = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return send(400, { error: 'not JSON' });
      }
      const id = String(customers.size + 1);
      customers.set(id, { id, ...customer });
      return send(201, customers.get(id));
    }
    if (req.method === 'GET' && path === '/customers') return send(200, [...customers.values()]);
    const match = /^\/customers\/([^/]+)$/.exec(path);
    if ((req.method === 'GET' || req.method === 'HEAD') && match) {
      const customer = customers.get(match[1]!);
      return customer ? send(200, customer) : send(404, { error: 'no such customer' });
    }
    if (req.method === 'GET' && path === '/static/hello.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.end('hello from the upstream, untouched\n');
    }
    send(404, { error: 'not found' });
  });
});
server.listen(port, '127.0.0.1', () => console.log(`upstream: customer app on http://127.0.0.1:${port}`));
process.once('SIGTERM', () => server.close());
