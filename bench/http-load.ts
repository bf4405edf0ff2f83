// The load generator of bench:http. wrk (C, Debian package `wrk`) when it is installed: it spends
// about 0.07 ms of CPU per 1,000-value call where autocannon (Node) spends about 0.5 ms, and on a
// 2-core machine the generator's CPU is taken from the service it measures. autocannon otherwise,
// or with BENCH_LOAD=autocannon. The bench's header names the one used.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  connections: number;
  seconds: number;
  headers: Record<string, string>;
  body: string;
}

export interface LoadResult {
  callsPerSecond: number;
  calls: number;
  p50Ms: number;
  p99Ms: number;
}

export type LoadGenerator = { name: string; run(options: LoadOptions): Promise<LoadResult> };

export function loadGenerator(): LoadGenerator {
  const wanted = process.env.BENCH_LOAD;
  if (wanted !== 'autocannon' && hasWrk()) return { name: 'wrk', run: runWrk };
  if (wanted === 'wrk') throw new Error('BENCH_LOAD=wrk but wrk is not installed (apt-get install wrk)');
  return { name: 'autocannon', run: runAutocannon };
}

function hasWrk(): boolean {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (e) {
    // wrk --version exits 1 after printing its version; only a missing binary is ENOENT
    return (e as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

async function runAutocannon(o: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: o.url,
    method: 'POST',
    connections: o.connections,
    duration: o.seconds,
    pipelining: 1,
    headers: o.headers,
    body: o.body,
  });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`non-2xx ${result.non2xx}, errors ${result.errors}`);
  const calls = (result.requests as { total?: number }).total ?? result.requests.average * o.seconds;
  return { callsPerSecond: calls / o.seconds, calls, p50Ms: result.latency.p50, p99Ms: result.latency.p99 };
}

async function runWrk(o: LoadOptions): Promise<LoadResult> {
  const dir = await mkdtemp(join(tmpdir(), 'veil-wrk-'));
  try {
    // the body from a file, so nothing in it needs Lua quoting
    await writeFile(join(dir, 'body.json'), o.body);
    const headers = Object.entries(o.headers)
      .map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`)
      .join('\n');
    await writeFile(
      join(dir, 'post.lua'),
      `wrk.method = "POST"\nlocal f = io.open(${JSON.stringify(join(dir, 'body.json'))}, "rb")\nwrk.body = f:read("*a")\nf:close()\n${headers}\n`,
    );
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn('wrk', ['-t', '1', '-c', String(o.connections), '-d', `${o.seconds}s`, '--latency', '-s', join(dir, 'post.lua'), o.url], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let text = '';
      child.stdout.on('data', (d) => (text += String(d)));
      child.stderr.on('data', (d) => (text += String(d)));
      child.once('error', reject);
      child.once('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk exited ${code}: ${text}`))));
    });
    return parseWrk(out, o.seconds);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** wrk's summary: calls, non-2xx and socket errors (which fail the bench), p50 and p99. */
export function parseWrk(out: string, seconds: number): LoadResult {
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  if (non2xx || (socket && socket.slice(1).some((n) => n !== '0'))) throw new Error(`wrk: ${non2xx?.[0] ?? ''} ${socket?.[0] ?? ''}`);
  const calls = /(\d+) requests in ([\d.]+)(us|ms|s|m)/.exec(out);
  if (!calls) throw new Error(`wrk printed no summary: ${out}`);
  const elapsed = Number(calls[2]) * { us: 1e-6, ms: 1e-3, s: 1, m: 60 }[calls[3] as 'us' | 'ms' | 's' | 'm'];
  return { calls: Number(calls[1]), callsPerSecond: Number(calls[1]) / (elapsed || seconds), p50Ms: percentile(out, '50'), p99Ms: percentile(out, '99') };
}

function percentile(out: string, p: string): number {
  const m = new RegExp(`^\\s+${p}(?:\\.\\d+)?%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(out);
  if (!m) throw new Error(`wrk printed no ${p}th percentile`);
  const scale = { us: 0.001, ms: 1, s: 1000, m: 60_000 }[m[2] as 'us' | 'ms' | 's' | 'm'];
  return Math.round(Number(m[1]) * scale * 10) / 10;
}
