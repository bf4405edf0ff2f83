import { createServer } from 'node:http';

/** the samples of a Prometheus text exposition: name, labels, value */
export function samples(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  return text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((line) => {
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!m) throw new Error(`not a sample line: ${line}`);
      const labels: Record<string, string> = {};
      for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
      return { name: m[1]!, labels, value: Number(m[3]) };
    });
}

/** the sum of the samples named `name` whose labels include `labels` */
export function sampleSum(text: string, name: string, labels: Record<string, string>): number {
  return samples(text)
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}

/** What a stand-in processor's /metrics serves: its URL, and close. */
export interface ServedMetrics {
  url: string;
  close(): Promise<void>;
}

/** A stand-in processor on 127.0.0.1 answering every request with `body()`, Prometheus text (of `contentType`). */
export async function serveMetrics(body: () => string | Promise<string>, contentType = 'text/plain; version=0.0.4'): Promise<ServedMetrics> {
  const server = createServer((_req, res) => void Promise.resolve(body()).then((text) => res.writeHead(200, { 'content-type': contentType }).end(text)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/metrics`,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
