// The floor of bench/gateway.ts, its own process: the reverse proxy a few lines of Node.js make
// (a keep-alive agent to the upstream, bodies and headers piped as they come, no checks at all),
// so the bench shows what any Node.js gateway adds on this machine beside what veil's adds.
//   scripts/node22 bench/gateway-bare-proxy.ts <upstream port> → prints {"port": N}
import http from 'node:http';

const upstreamPort = Number(process.argv[2]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
const server = http.createServer((req, res) => {
  const up = http.request({ host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  up.on('error', () => res.destroy());
  req.pipe(up);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: (server.address() as { port: number }).port })}\n`));
process.once('SIGTERM', () => server.close(() => process.exit(0)));
