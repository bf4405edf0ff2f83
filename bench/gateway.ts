// npm run bench:gateway — the latency veil gateway adds: p50/p99 of a POST whose JSON body has 10
// protected fields (protected on the way in with the caller's roles, revealed on the way back,
// audited to a file) through `veil gateway`, beside the same POST sent directly to the upstream
// and through a route without selectors, measured in the same run on one keep-alive connection
// each, interleaved in rounds. The gateway and the upstream are their own processes. The 10-field
// route runs with the unmapped guard on (the default: every value no selector names is checked by
// veil's detectors) and, on the same requests, on a twin route with `unmapped: pass`, so the
// guard's cost shows.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngine } from '../src/app/open-engine.ts';
import { JwtSigner } from '../src/keystore/jwt-signer.ts';

const root = new URL('..', import.meta.url).pathname;
const calls = Number(process.env.BENCH_CALLS ?? 4000);
const rounds = 8;
const MASTER_KEY = 'd'.repeat(64);
const ISSUER = 'http://veil.bench';

const FIELDS: [string, string][] = [
  ['customer.email', 'Customer.email'], ['customer.name', 'Customer.name'], ['customer.card', 'Customer.cardNumber'], ['customer.nationalId', 'Customer.nationalId'],
  ['billing.email', 'Customer.email'], ['billing.card', 'Customer.cardNumber'], ['shipping.name', 'Customer.name'], ['shipping.email', 'Customer.email'],
  ['contact.email', 'Customer.email'], ['contact.nationalId', 'Customer.nationalId'],
];
const body = JSON.stringify({
  id: 'order-1234', total: 129.9, currency: 'EUR', lines: [{ sku: 'A-1', qty: 2 }, { sku: 'B-7', qty: 1 }],
  customer: { email: 'alice@example.com', name: 'Alice Martin', card: '4111-1111-1111-1111', nationalId: 'AB123456C', tier: 'gold' },
  billing: { email: 'billing@example.com', card: '5500-0000-0000-0004', street: '1 rue de la Paix' },
  shipping: { name: 'Bob Martin', email: 'bob@example.com', street: '2 rue de la Paix' },
  contact: { email: 'carol@example.com', nationalId: 'ZX987654A' },
});

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function post(agent: http.Agent, port: number, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`${path}: status ${res.statusCode} ${Buffer.concat(chunks).toString().slice(0, 200)}`));
        else resolve(performance.now() - started);
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const dataDir = await mkdtemp(join(tmpdir(), 'veil-bench-gateway-'));
const children: ChildProcess[] = [];
try {
  const upstream = spawn(join(root, 'scripts/node22'), [join(root, 'bench/gateway-upstream.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(upstream);
  const upstreamPort = JSON.parse(String(((await once(upstream.stdout!, 'data')) as [Buffer])[0])).port as number;

  const configFile = join(dataDir, 'gateway.yaml');
  const selectors = FIELDS.map(([s, f]) => `        - { select: ${s}, field: ${f} }`).join('\n');
  await writeFile(configFile, `${await readFile(join(root, 'config/example.yaml'), 'utf8')}
gateway:
  upstream: http://127.0.0.1:${upstreamPort}
  routes:
    - name: orders
      method: POST
      path: /orders
      request:
${selectors}
      response:
${selectors}
    - name: orders-unguarded
      method: POST
      path: /orders-unguarded
      unmapped: pass
      request:
${selectors}
      response:
${selectors}
    - { name: plain, method: POST, path: /plain }
`);
  const { keystore } = await openEngine({ configFile, dataDir, env: { VEIL_MASTER_KEY: MASTER_KEY }, now: () => new Date(), provision: true });
  await keystore.create('veil-token-signing', 'jwt-es256');
  const iat = Math.floor(Date.now() / 1000);
  const token = await new JwtSigner(keystore, 'veil-token-signing').sign({ iss: ISSUER, sub: 'bench', aud: 'veil', iat, nbf: iat, exp: iat + 3600, client_id: 'bench', roles: ['fraud'] }, 'at+jwt');

  const gatewayPort = 18_500 + Math.floor(Math.random() * 1000);
  const gateway = spawn(join(root, 'scripts/node22'), [join(root, 'src/cli/main.ts'), 'gateway', '--config', configFile, '--data-dir', dataDir, '--port', String(gatewayPort)], {
    env: { ...process.env, VEIL_MASTER_KEY: MASTER_KEY, VEIL_BASE_URL: ISSUER, VEIL_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(gateway);
  for (let i = 0; ; i++) {
    const ok = await fetch(`http://127.0.0.1:${gatewayPort}/_veil/healthz`).then((r) => r.ok, () => false);
    if (ok) break;
    if (i > 300) throw new Error('the gateway did not start');
    await new Promise((r) => setTimeout(r, 100));
  }

  const auth = { authorization: `Bearer ${token}` };
  const targets = {
    direct: { agent: new http.Agent({ keepAlive: true, maxSockets: 1 }), port: upstreamPort, path: '/orders', headers: {} },
    'gateway, no selectors': { agent: new http.Agent({ keepAlive: true, maxSockets: 1 }), port: gatewayPort, path: '/plain', headers: auth },
    'gateway, 10 fields': { agent: new http.Agent({ keepAlive: true, maxSockets: 1 }), port: gatewayPort, path: '/orders', headers: auth },
    '10 fields, guard off': { agent: new http.Agent({ keepAlive: true, maxSockets: 1 }), port: gatewayPort, path: '/orders-unguarded', headers: auth },
  };
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
  // warm-up: JIT, connection pools, token and grant caches
  for (const t of Object.values(targets)) for (let i = 0; i < 300; i++) await post(t.agent, t.port, t.path, t.headers);
  // the guard on and off alternate call by call, so that a pause of the gateway (a GC, the
  // machine's other work) falls on both alike; the other targets run in blocks
  const paired = ['gateway, 10 fields', '10 fields, guard off'];
  for (let r = 0; r < rounds; r++) {
    for (const [name, t] of Object.entries(targets)) {
      if (paired.includes(name)) continue;
      for (let i = 0; i < calls / rounds; i++) samples[name]!.push(await post(t.agent, t.port, t.path, t.headers));
    }
    for (let i = 0; i < calls / rounds; i++) {
      for (const name of (i % 2 === 0 ? paired : [...paired].reverse())) {
        const t = targets[name as keyof typeof targets];
        samples[name]!.push(await post(t.agent, t.port, t.path, t.headers));
      }
    }
  }

  const stats = Object.fromEntries(Object.entries(samples).map(([k, v]) => {
    const sorted = [...v].sort((a, b) => a - b);
    return [k, { p50: percentile(sorted, 50), p99: percentile(sorted, 99) }];
  }));
  const direct = stats.direct!;
  console.log(`veil bench:gateway — Node ${process.version}, ${calls} sequential POSTs per target (${Buffer.byteLength(body)}-byte JSON body), one keep-alive connection each, interleaved in ${rounds} rounds\n`);
  console.log('target                   p50 ms   p99 ms   p50 / direct   p99 / direct   added p50 ms   added p99 ms');
  for (const [name, s] of Object.entries(stats)) {
    console.log(`${name.padEnd(24)} ${s.p50.toFixed(3).padStart(6)}   ${s.p99.toFixed(3).padStart(6)}   ${`${(s.p50 / direct.p50).toFixed(2)}×`.padStart(12)}   ${`${(s.p99 / direct.p99).toFixed(2)}×`.padStart(12)}   ${(s.p50 - direct.p50).toFixed(3).padStart(12)}   ${(s.p99 - direct.p99).toFixed(3).padStart(12)}`);
  }
  const on = stats['gateway, 10 fields']!;
  const off = stats['10 fields, guard off']!;
  console.log(`\nunmapped guard (default refuse) vs unmapped: pass on the same requests: ${(on.p50 - off.p50).toFixed(3)} ms at p50, ${(on.p99 - off.p99).toFixed(3)} ms at p99`);
  console.log('10 fields: Customer.email ×4 (AES-SIV), name ×2 (AES-GCM), cardNumber ×2 and nationalId ×2 (FF1), protected on the way in and revealed (role fraud, audited) on the way back;');
  console.log('the guard checks the body\'s 10 other values and its 25 keys (none personal) on the way in.');
  for (const t of Object.values(targets)) t.agent.destroy();
} finally {
  for (const c of children) c.kill('SIGTERM');
  await rm(dataDir, { recursive: true, force: true });
}
