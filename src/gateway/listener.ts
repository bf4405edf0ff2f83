import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { Logger } from 'pino';
import type { VeilError } from '../engine/index.ts';
import { DoorError } from '../errors/door-errors.ts';
import { GatewayError } from './errors.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import { answerSocket, isClosing, refuse } from './replies.ts';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface ListenerOptions {
  /** serve HTTPS with this PEM certificate (chain) and key */
  tls?: { cert: Buffer; key: Buffer };
  metrics: GatewayMetrics;
  logger: Logger;
}

/**
 * The gateway's HTTP(S) server: each request reaches `handle` in its connection's order, and
 * what Node's parser refuses before a request exists (bad framing, an expectation other than
 * 100-continue, CONNECT) is answered here and counted as `unmatched`.
 */
export function createListener(options: ListenerOptions, handle: RequestHandler): http.Server {
  const { metrics, logger } = options;
  const inOrder = oneAtATime(handle);
  const settings = { requestTimeout: 0, headersTimeout: 60_000 };
  const server: http.Server = options.tls
    ? https.createServer({ ...settings, cert: options.tls.cert, key: options.tls.key }, inOrder)
    : http.createServer(settings, inOrder);
  // 100 Continue is sent when the gateway starts reading the body (callerBody), not on arrival
  server.on('checkContinue', inOrder);
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    metrics.requests.inc({ route: 'unmatched', outcome: 'EXPECTATION_FAILED', status: '417' });
    refuse(req, res, new GatewayError('EXPECTATION_FAILED', 'the only expectation the gateway meets is 100-continue'), randomUUID(), logger);
  });
  server.on('clientError', (error: NodeJS.ErrnoException & { reason?: string }, socket) => {
    const refusal = clientRefusal(error);
    if (refusal) metrics.requests.inc({ route: 'unmatched', outcome: refusal.code, status: String(refusal.status) });
    answerSocket(socket, refusal, randomUUID());
  });
  server.on('connect', (_req: IncomingMessage, socket) => {
    metrics.requests.inc({ route: 'unmatched', outcome: 'METHOD_NOT_ALLOWED', status: '405' });
    answerSocket(socket, new DoorError('METHOD_NOT_ALLOWED', 'the gateway does not tunnel (CONNECT)'), randomUUID());
  });
  return server;
}

/**
 * Requests pipelined on one connection are handled one after the other: the next is forwarded only
 * once the previous response is complete and left the connection open (a refusal, an unsent
 * 100 Continue or the caller's Connection: close end it). Node's parser emits them all at once;
 * forwarding one whose answer would never be sent would act on a request nobody gets a reply to.
 */
function oneAtATime(handle: RequestHandler): RequestHandler {
  const previous = new WeakMap<object, ServerResponse>();
  return (req, res) => {
    const prior = previous.get(req.socket);
    previous.set(req.socket, res);
    if (!prior || prior.writableFinished) return handle(req, res);
    prior.once('close', () => {
      if (prior.writableFinished && prior.shouldKeepAlive && !isClosing(req) && !req.socket.destroyed) handle(req, res);
      else req.resume();
    });
  };
}

/** What a request Node's parser refused gets: 431, 408, or 400 REQUEST_FRAMING_INVALID; nothing for a reset. */
function clientRefusal(error: NodeJS.ErrnoException & { reason?: string }): VeilError | undefined {
  if (error.code === 'ECONNRESET') return undefined;
  if (error.code === 'HPE_HEADER_OVERFLOW') return new GatewayError('HEADERS_TOO_LARGE', 'the request line and headers exceed the limit');
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return new DoorError('REQUEST_TIMEOUT', 'the request headers did not arrive in time');
  // llhttp's reasons are fixed texts ("Transfer-Encoding can't be present with Content-Length"), never request bytes
  const reason = typeof error.reason === 'string' && /^[\w\s`'.,/-]{1,120}$/.test(error.reason) ? `: ${error.reason}` : '';
  return new GatewayError('REQUEST_FRAMING_INVALID', `the request cannot be parsed unambiguously (${error.code ?? 'parse error'})${reason}`);
}
