import http from 'node:http';

export interface Reply {
  status: number;
  statusMessage: string;
  rawHeaders: string[];
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** A real HTTP/1.1 client on a fresh connection: raw headers in, raw headers and bytes out (no decoding). */
export function call(
  url: string,
  method: string,
  path: string,
  options: { headers?: string[]; body?: Buffer | string; chunked?: boolean } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    // a header list (to send repeated and hop-by-hop headers as given) gets no automatic Host
    const headers = ['Host', new URL(url).host, ...(options.headers ?? [])];
    if (body && !options.chunked) headers.push('Content-Length', String(body.length));
    // path as given: a URL would normalize dot segments away
    const { hostname, port } = new URL(url);
    const req = http.request({ hostname, port, path, method, headers, agent: false });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          statusMessage: res.statusMessage ?? '',
          rawHeaders: res.rawHeaders,
          headers: res.headers,
          body: Buffer.concat(chunks),
        }),
      );
    });
    if (body && options.chunked) {
      // several writes: sent chunked, as a streaming client would
      for (let i = 0; i < body.length; i += 65_536) req.write(body.subarray(i, i + 65_536));
      req.end();
    } else req.end(body);
  });
}
