import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { finished, type Readable } from 'node:stream';
import { GatewayError, GatewayFault } from './errors.ts';

/** Errors that mean the upstream was never reached: nothing was sent, so the call may be retried. */
const NOT_REACHED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

export interface UpstreamRequest {
  method: string;
  /** the request target as normalized (path and query), appended to the upstream's base path */
  target: string;
  /** with the gateway's own framing: Content-Length, or Transfer-Encoding: chunked for a chunked stream */
  headers: string[];
  /** a buffered body, or a stream piped as it arrives (exactly its Content-Length, or chunked), or none */
  body: Buffer | Readable | undefined;
}

/** RFC 9110 §9.2.2: methods whose repetition has the effect of one request. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

/**
 * The application behind the gateway: one keep-alive connection pool. A request whose pooled
 * connection turns out to have been closed (ECONNRESET on a reused socket) is sent once more on a
 * fresh one only when that cannot act twice: its method is idempotent and its body is buffered or
 * empty. The reset usually means the upstream closed the connection idle and saw nothing, but the
 * gateway cannot tell that from an upstream that read the request, acted on it and then dropped
 * the connection; so a POST, PATCH or other non-idempotent request is never sent twice and fails
 * with UPSTREAM_TIMEOUT ("it may have acted on it"), which is not retriable. Node's agent closes a
 * pooled connection a second before the upstream's `Keep-Alive: timeout=` hint, which keeps the
 * idle-close race rare.
 */
export class Upstream {
  readonly url: URL;
  private readonly agent: http.Agent;
  private readonly timeoutMs: number;
  private readonly basePath: string;

  constructor(url: string, options: { timeoutMs: number }) {
    this.url = new URL(url);
    const secure = this.url.protocol === 'https:';
    this.agent = secure ? new https.Agent({ keepAlive: true, maxFreeSockets: 64 }) : new http.Agent({ keepAlive: true, maxFreeSockets: 64 });
    this.timeoutMs = options.timeoutMs;
    this.basePath = this.url.pathname.replace(/\/$/, '');
  }

  /** The Host the upstream expects. */
  get host(): string {
    return this.url.host;
  }

  /** Sends the request; resolves with the response headers, rejects with UPSTREAM_UNAVAILABLE or UPSTREAM_TIMEOUT. */
  async send(request: UpstreamRequest, signal: AbortSignal): Promise<IncomingMessage> {
    try {
      return await this.attempt(request, signal);
    } catch (e) {
      if (!(e instanceof GatewayFault && e.code === 'POOLED_CONNECTION_RESET')) throw e;
      if (replayable(request)) return this.attempt(request, signal);
      // its cause is the UPSTREAM_TIMEOUT the caller is answered with
      throw e.cause;
    }
  }

  close(): void {
    this.agent.destroy();
  }

  private attempt(request: UpstreamRequest, signal: AbortSignal): Promise<IncomingMessage> {
    const client = this.url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = client.request({
        protocol: this.url.protocol,
        hostname: this.url.hostname,
        port: this.url.port,
        agent: this.agent,
        method: request.method,
        path: `${this.basePath}${request.target}`,
        headers: request.headers,
        setHost: false,
      });
      cutOnAbort(req, signal);
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        req.destroy();
        reject(new GatewayError('UPSTREAM_TIMEOUT', `the upstream sent no response within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      req.once('response', (res) => {
        clearTimeout(timer);
        if (settled) return res.resume();
        settled = true;
        resolve(res);
      });
      req.once('error', (e: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        if (settled) return;
        settled = true;
        if (req.reusedSocket && e.code === 'ECONNRESET')
          reject(new GatewayFault('POOLED_CONNECTION_RESET', 'pooled connection reset', { cause: timeoutError(e) }));
        else if (e.code !== undefined && NOT_REACHED.has(e.code))
          reject(new GatewayError('UPSTREAM_UNAVAILABLE', `the upstream cannot be reached (${e.code})`));
        else reject(timeoutError(e));
      });
      const body = request.body;
      if (body === undefined) req.end();
      else if (Buffer.isBuffer(body)) req.end(body);
      // a body that ends early (the caller went away) destroys the upstream request: the upstream
      // sees a truncated request on a closed connection, never the start of another one
      else {
        body.pipe(req);
        finished(body, (e) => {
          if (e) req.destroy(e);
        });
      }
    });
  }
}

/** Whether sending the request again is safe: idempotent, and its body (if any) still at hand. */
export function replayable(request: Pick<UpstreamRequest, 'method' | 'body'>): boolean {
  return IDEMPOTENT.has(request.method.toUpperCase()) && (request.body === undefined || Buffer.isBuffer(request.body));
}

/**
 * Destroys the request when `signal` aborts (the caller went away), as http.request's own `signal`
 * option does, with one listener instead of the end-of-stream hooks that option puts on every
 * request.
 */
function cutOnAbort(req: http.ClientRequest, signal: AbortSignal): void {
  const abort = () => req.destroy(Object.assign(new Error('the caller went away', { cause: signal.reason }), { name: 'AbortError', code: 'ABORT_ERR' }));
  if (signal.aborted) {
    process.nextTick(abort);
    return;
  }
  signal.addEventListener('abort', abort, { once: true });
  req.once('close', () => signal.removeEventListener('abort', abort));
}

function timeoutError(e: NodeJS.ErrnoException): GatewayError {
  return new GatewayError('UPSTREAM_TIMEOUT', `the upstream connection failed after the request was sent (${e.code ?? e.name})`);
}
