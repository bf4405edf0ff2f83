import { PassThrough, type Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { VeilError } from '../engine/index.ts';
import { DoorError } from '../errors/door-errors.ts';

export const DEFAULT_BODY_READ_TIMEOUT_MS = 30_000;

type Send = (reply: FastifyReply, error: VeilError, req: FastifyRequest) => FastifyReply;

interface Deadline {
  timer: NodeJS.Timeout;
  /** what the body parser reads instead of the request, so the deadline can fail the read alone */
  stream?: PassThrough;
}

const DEADLINE = Symbol('veil.bodyDeadline');
type WithDeadline = FastifyRequest & { [DEADLINE]?: Deadline };

/**
 * A request body must have arrived `timeoutMs` after the request's headers. A client that
 * trickles it, or stops sending, would otherwise hold a connection and a buffer for as long as
 * it likes (Node's own requestTimeout is off under Fastify and answers without a problem body).
 * At the deadline, a body still being read fails the read: 408 REQUEST_TIMEOUT through the error
 * handler, and the connection closes. If the answer went out already (a 404, a GET that ignores
 * its body), the connection is closed instead. Register before hooks that may answer early.
 */
export function registerBodyReadTimeout(app: FastifyInstance, timeoutMs: number, send: Send): void {
  app.addHook('onRequest', (req, reply, done) => {
    if (!hasBody(req.raw)) return done();
    const deadline: Deadline = { timer: setTimeout(() => expire(req, reply, deadline, timeoutMs, send), timeoutMs) };
    deadline.timer.unref();
    const clear = () => clearTimeout(deadline.timer);
    // read to its end, or the connection is gone
    req.raw.once('end', clear).once('close', clear);
    (req as WithDeadline)[DEADLINE] = deadline;
    done();
  });

  app.addHook('preParsing', async (req, _reply, payload) => {
    const deadline = (req as WithDeadline)[DEADLINE];
    if (!deadline) return payload;
    // every byte arrived already (a small body comes in the packet of its headers): nothing left
    // to wait for, so no deadline and no copy through a stream
    if (req.raw.complete) {
      clearTimeout(deadline.timer);
      return payload;
    }
    // not stream.pipeline: failing the copy must not destroy the request, whose socket still
    // has to carry the 408
    const stream = new PassThrough();
    // the body parser listens for errors; without a reader (a GET that ignores its body) an
    // aborted upload must not become an unhandled 'error' event
    stream.on('error', () => undefined);
    payload.once('error', (e) => stream.destroy(e));
    (payload as Readable).pipe(stream);
    deadline.stream = stream;
    return stream;
  });
}

function expire(req: FastifyRequest, reply: FastifyReply, deadline: Deadline, timeoutMs: number, send: Send): void {
  // every byte arrived: reading them is the server's business, not the client's
  if (req.raw.complete) return;
  if (reply.sent || reply.raw.headersSent) {
    req.raw.socket?.destroy();
    return;
  }
  const error = new DoorError('REQUEST_TIMEOUT', `the request body did not arrive within ${timeoutMs} ms`);
  // the body parser answers through the error handler; with no parser reading, answer here
  if (deadline.stream && deadline.stream.listenerCount('data') > 0) deadline.stream.destroy(error);
  else send(reply, error, req);
}

function hasBody(raw: IncomingMessage): boolean {
  return raw.headers['transfer-encoding'] !== undefined || Number(raw.headers['content-length'] ?? 0) > 0;
}
