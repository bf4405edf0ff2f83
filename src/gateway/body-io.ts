import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { Coding } from './headers.ts';

/** Why a body could not be read in whole. */
export class BodyReadError extends Error {
  readonly reason: 'too-large' | 'timeout' | 'aborted';
  constructor(reason: 'too-large' | 'timeout' | 'aborted') {
    super(`body ${reason}`);
    this.name = 'BodyReadError';
    this.reason = reason;
  }
}

/**
 * Reads a whole body of at most `limit` bytes within `timeoutMs`; rejects as soon as it grows past
 * the limit, the time is up, or the stream ends early, and stops reading then.
 */
export function readBody(stream: Readable, limit: number, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (error?: BodyReadError) => {
      clearTimeout(timer);
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('aborted', onAborted);
      stream.off('close', onClose);
      if (error) {
        stream.pause();
        reject(error);
      } else resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) finish(new BodyReadError('too-large'));
      else chunks.push(chunk);
    };
    const onEnd = () => finish();
    const onError = () => finish(new BodyReadError('aborted'));
    const onAborted = () => finish(new BodyReadError('aborted'));
    const onClose = () => finish(new BodyReadError('aborted'));
    const timer = setTimeout(() => finish(new BodyReadError('timeout')), timeoutMs);
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onError);
    stream.once('aborted', onAborted);
    stream.once('close', onClose);
  });
}

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);
const inflateRaw = promisify(zlib.inflateRaw);
const brotliDecompress = promisify(zlib.brotliDecompress);
const gzip = promisify(zlib.gzip);
const deflate = promisify(zlib.deflate);
const brotliCompress = promisify(zlib.brotliCompress);

/** Decoding failed: corrupt data, or more than the limit once decoded (a compression bomb). */
export class DecodeError extends Error {
  readonly tooLarge: boolean;
  constructor(tooLarge: boolean) {
    super(tooLarge ? 'decoded body too large' : 'body cannot be decoded');
    this.name = 'DecodeError';
    this.tooLarge = tooLarge;
  }
}

/** The body without its content coding, at most `limit` bytes once decoded. */
export async function decodeBody(body: Buffer, coding: Coding, limit: number): Promise<Buffer> {
  const options = { maxOutputLength: limit };
  try {
    if (coding === 'identity') return body;
    if (coding === 'gzip') return await gunzip(body, options);
    if (coding === 'br') return await brotliDecompress(body, options);
    // RFC 9110 "deflate" is the zlib format; some servers send raw deflate, which is accepted too
    return await inflate(body, options).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ERR_BUFFER_TOO_LARGE') throw e;
      return inflateRaw(body, options);
    });
  } catch (e) {
    throw new DecodeError((e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || e instanceof RangeError);
  }
}

/** The body in `coding` again; brotli at a moderate quality, since this is on every call's path. */
export async function encodeBody(body: Buffer, coding: Coding): Promise<Buffer> {
  if (coding === 'identity') return body;
  if (coding === 'gzip') return gzip(body);
  if (coding === 'br') return brotliCompress(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
  return deflate(body);
}
