import type { IncomingMessage } from 'node:http';

import { GatewayError } from './errors.ts';

/**
 * How a request's body is delimited. The gateway forwards each request it accepted as exactly one
 * request framed by itself — its own Content-Length, or chunked where it streams a chunked body —
 * so no byte of a body can be read upstream as another request (request smuggling).
 *
 * Node's parser (llhttp, strict) already refuses Content-Length with Transfer-Encoding, duplicate
 * or malformed Content-Length, a Transfer-Encoding whose last coding is not chunked or that repeats
 * chunked, obs-fold, bare CR or LF, control characters in header values and malformed chunks
 * (clientError, answered 400 REQUEST_FRAMING_INVALID by the server). What it lets through and the
 * gateway refuses here: Transfer-Encoding other than exactly `chunked` (`gzip, chunked`,
 * `identity, chunked`), Transfer-Encoding on HTTP/1.0 (RFC 9112 §6.1), and — checked again on the
 * raw headers rather than trusted — repeated framing headers.
 */
export type Framing = { kind: 'none' } | { kind: 'length'; length: number } | { kind: 'chunked' };

/** Methods whose requests have no body by their definition (RFC 9110 §9.3). */
const BODYLESS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE']);

const framingInvalid = (why: string) => new GatewayError('REQUEST_FRAMING_INVALID', `the request's framing is ambiguous: ${why}`);

export function requestFraming(req: IncomingMessage): Framing {
  if (req.httpVersionMajor !== 1) throw framingInvalid(`HTTP/${req.httpVersion} in an HTTP/1 request line`);
  const te: string[] = [];
  const cl: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name === 'transfer-encoding') te.push(raw[i + 1]!);
    else if (name === 'content-length') cl.push(raw[i + 1]!);
  }
  if (te.length > 0) {
    if (cl.length > 0) throw framingInvalid('both Content-Length and Transfer-Encoding');
    if (te.length > 1) throw framingInvalid('Transfer-Encoding is repeated');
    if (te[0]!.trim().toLowerCase() !== 'chunked') throw framingInvalid('Transfer-Encoding is not exactly chunked');
    if (req.httpVersion !== '1.1') throw framingInvalid('Transfer-Encoding in an HTTP/1.0 request');
    return { kind: 'chunked' };
  }
  if (cl.length > 1) throw framingInvalid('Content-Length is repeated');
  if (cl.length === 0) return { kind: 'none' };
  const value = cl[0]!.trim();
  if (!/^\d{1,15}$/.test(value)) throw framingInvalid('Content-Length is not a decimal length');
  return { kind: 'length', length: Number(value) };
}

export function hasBody(framing: Framing): boolean {
  return framing.kind === 'chunked' || (framing.kind === 'length' && framing.length > 0);
}

/** BODY_NOT_ALLOWED for a body on a method without one, unless the route accepts it (`allowBody`). */
export function checkBodyAllowed(method: string, framing: Framing, allowBody: boolean): void {
  if (!allowBody && hasBody(framing) && BODYLESS.has(method)) {
    throw new GatewayError('BODY_NOT_ALLOWED', `a ${method} request has no body on this route`);
  }
}

/** The one Host of the request: absent (HTTP/1.0) or repeated is refused. */
export function hostOf(req: IncomingMessage): string {
  const hosts: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === 'host') hosts.push(raw[i + 1]!);
  if (hosts.length !== 1 || hosts[0]!.trim() === '') throw new GatewayError('REQUEST_TARGET_INVALID', 'the request needs exactly one Host header');
  return hosts[0]!.trim();
}

/** The framing headers the gateway sends upstream for a body it forwards as received. */
export function framingHeaders(framing: Framing): string[] {
  if (framing.kind === 'chunked') return ['Transfer-Encoding', 'chunked'];
  if (framing.kind === 'length') return ['Content-Length', String(framing.length)];
  return [];
}
