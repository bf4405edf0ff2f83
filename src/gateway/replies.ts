import type { IncomingMessage, ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { VeilError } from '../engine/index.ts';
import { PROBLEM_CONTENT_TYPE, problemOf } from '../errors/problem.ts';
import { UnmappedRefusal } from './drift-guard.ts';

/**
 * The gateway's refusal as problem details. A refusal that comes before the caller's body was read
 * in whole closes the connection: the rest of the body (or, after Expect: 100-continue, its absence)
 * must never be parsed as the caller's next request. After the response started, the connection is
 * cut instead; after it ended, nothing more happens.
 */
/**
 * Connections a refusal is closing. Node's parser keeps emitting requests pipelined behind the
 * refused one (their responses queued); they are not forwarded: the connection ends with the refusal.
 */
const closing = new WeakSet<object>();

/** refusals of the request's framing, target or size: whatever follows on the connection is not read */
const CLOSING_CODES = new Set([
  'REQUEST_TIMEOUT',
  'BODY_TOO_LARGE',
  'BODY_NOT_ALLOWED',
  'REQUEST_FRAMING_INVALID',
  'REQUEST_TARGET_INVALID',
  'PATH_NOT_CANONICAL',
  'EXPECTATION_FAILED',
]);

export function isClosing(req: IncomingMessage): boolean {
  return closing.has(req.socket);
}

export function refuse(req: IncomingMessage, res: ServerResponse, error: VeilError, id: string, logger: Logger): void {
  if (res.writableEnded) return;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (error.status >= 500) logger.error({ id, code: error.code }, 'exchange failed');
  // the unmapped guard's paths and kinds (never a value) tell the operator which selector is missing
  else
    logger.info(
      { id, code: error.code, ...(error instanceof UnmappedRefusal ? { unmapped: error.findings.map((f) => `${f.path} (${f.kind})`) } : {}) },
      'exchange refused',
    );
  const headers: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE, 'x-request-id': id };
  if (error.status === 401) {
    headers['www-authenticate'] =
      `Bearer realm="veil"${error.code === 'TOKEN_MISSING' ? '' : `, error="invalid_token", error_description="${error.code.toLowerCase()}"`}`;
  }
  if (!req.complete || CLOSING_CODES.has(error.code)) {
    headers.connection = 'close';
    closing.add(req.socket);
  }
  const problem = problemOf(error, id);
  // RFC 9457 extension member: each finding's path (selector syntax), kind, pointer and whether it is a key
  const body = Buffer.from(JSON.stringify(error instanceof UnmappedRefusal ? { ...problem, unmapped: error.findings } : problem));
  headers['content-length'] = String(body.length);
  res.writeHead(error.status, headers);
  res.end(body);
}

/**
 * Answers on the bare socket what Node's parser could not parse (or a CONNECT), then closes it:
 * nothing after the bad bytes is read as a request. Nothing is written when a response is already
 * under way on the socket, or for `undefined` (a reset connection).
 */
export function answerSocket(socket: Duplex, error: VeilError | undefined, id: string): void {
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (error === undefined) {
    socket.destroy();
    return;
  }
  if (inFlight && !inFlight.destroyed) {
    // the gateway already answered with a response that closes the connection: that is the answer
    if (inFlight.writableEnded && !inFlight.shouldKeepAlive) return;
    if (inFlight.req.complete && !inFlight.writableFinished) {
      // the bad bytes followed a whole request whose response is under way: it goes first
      inFlight.once('close', () => {
        if (inFlight.writableFinished && inFlight.shouldKeepAlive) answerSocket(socket, error, id);
      });
      return;
    }
    if (inFlight.headersSent) {
      socket.destroy();
      return;
    }
  }
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(problemOf(error, id));
  socket.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
  );
  socket.once('finish', () => socket.destroy());
}

export function sendText(res: ServerResponse, contentType: string, text: string): void {
  const body = Buffer.from(text);
  res.writeHead(200, { 'content-type': contentType, 'content-length': String(body.length), 'cache-control': 'no-store' });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, doc: unknown): void {
  const body = Buffer.from(JSON.stringify(doc));
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(body.length), 'cache-control': 'no-store' });
  res.end(body);
}
