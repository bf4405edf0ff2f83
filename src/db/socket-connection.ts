import type { Socket } from 'node:net';
import { errorFrame, HEADER_BYTES } from './socket-frames.ts';
import { frameRefusal, type Answer, type Session } from './socket-session.ts';

export interface ConnectionLimits {
  /** largest payload accepted; a header announcing more is refused before anything else is read */
  maxFrameBytes: number;
  /** a connection that has not authenticated within this long is closed */
  authTimeoutMs: number;
  /** a frame that has begun must be complete within this long */
  frameTimeoutMs: number;
}

/**
 * Serves one connection, strictly one frame at a time: the socket is paused while a frame is
 * answered, so a client that sends faster than it reads holds at most one frame and one read
 * chunk in memory. A header announcing an empty or oversized frame, a frame that does not parse,
 * a refused token or a frame that stalls gets one error frame, then the connection is closed.
 */
/** A refusal of the socket itself; the connection closes after it. */
const refusal = (code: Parameters<typeof frameRefusal>[0], title: string): Answer => ({ reply: errorFrame(frameRefusal(code, title)), close: true });

export function serveConnection(socket: Socket, session: Session, limits: ConnectionLimits, onUnexpected: (e: unknown) => void): void {
  let buffer: Buffer = Buffer.alloc(0);
  let busy = false;
  let closing = false;
  let frameTimer: NodeJS.Timeout | undefined;

  const finish = (answer: Answer) => {
    if (socket.destroyed) return;
    if (answer.close) {
      closing = true;
      clearTimeout(frameTimer);
      clearTimeout(authTimer);
      socket.end(answer.reply);
      // a peer that does not read the last frame does not keep the connection
      setTimeout(() => socket.destroy(), 1000).unref();
    } else {
      socket.write(answer.reply);
    }
  };
  const authTimer = setTimeout(() => {
    if (!session.authenticated) finish(refusal('TOKEN_MISSING', `no AUTH frame within ${limits.authTimeoutMs} ms`));
  }, limits.authTimeoutMs);
  authTimer.unref();

  const pump = () => {
    while (!busy && !closing) {
      if (buffer.length < HEADER_BYTES) break;
      const length = buffer.readUInt32BE(0);
      if (length === 0 || length > limits.maxFrameBytes) {
        finish(
          length === 0
            ? refusal('REQUEST_MALFORMED', 'malformed frame: an empty frame')
            : refusal('BODY_TOO_LARGE', `the frame exceeds the limit of ${limits.maxFrameBytes} bytes`),
        );
        return;
      }
      if (buffer.length < HEADER_BYTES + length) break;
      const payload = buffer.subarray(HEADER_BYTES, HEADER_BYTES + length);
      buffer = buffer.subarray(HEADER_BYTES + length);
      clearTimeout(frameTimer);
      frameTimer = undefined;
      busy = true;
      socket.pause();
      session
        .handle(payload)
        .then(finish, (e: unknown) => {
          onUnexpected(e);
          finish(refusal('INTERNAL', 'An unexpected error; nothing was transformed'));
        })
        .finally(() => {
          busy = false;
          if (socket.destroyed || closing) return;
          socket.resume();
          pump();
        });
      return;
    }
    // a frame has begun (some bytes are here) and must complete in time
    if (!closing && buffer.length > 0 && frameTimer === undefined) {
      frameTimer = setTimeout(() => finish(refusal('REQUEST_TIMEOUT', `the frame did not arrive within ${limits.frameTimeoutMs} ms`)), limits.frameTimeoutMs);
      frameTimer.unref();
    }
  };

  socket.on('data', (chunk: Buffer) => {
    if (closing) return;
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    pump();
  });
  socket.on('error', () => socket.destroy());
  socket.on('close', () => {
    clearTimeout(frameTimer);
    clearTimeout(authTimer);
  });
}
