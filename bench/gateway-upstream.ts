// The upstream of bench/gateway.ts, its own process: echoes a request body with its Content-Type.
//   scripts/node22 bench/gateway-upstream.ts → prints {"port": N}
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/octet-stream', 'content-length': body.length });
    res.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: (server.address() as { port: number }).port })}\n`));
process.once('SIGTERM', () => server.close(() => process.exit(0)));
