import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { GatewayFault } from './errors.ts';
import type { Coding } from './headers.ts';

/**
 * Reads a whole body of at most `limit` bytes within `timeoutMs`; rejects as soon as it grows past
 * the limit, the time is up, or the stream ends early, and stops reading then (a GatewayFault:
 * BODY_OVER_LIMIT, BODY_READ_TIMEOUT, BODY_CUT_SHORT), which the reader answers as its side calls for.
 */
export function readBody(stream: Readable, limit: number, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (error?: GatewayFault) => {
      clearTimeout(timer);
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', cutShort);
      stream.off('aborted', cutShort);
      stream.off('close', cutShort);
      if (error) {
        stream.pause();
        reject(error);
      } else resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) finish(new GatewayFault('BODY_OVER_LIMIT', 'body too large'));
      else chunks.push(chunk);
    };
    const onEnd = () => finish();
    const cutShort = () => finish(new GatewayFault('BODY_CUT_SHORT', 'body cut short'));
    const timer = setTimeout(() => finish(new GatewayFault('BODY_READ_TIMEOUT', 'body timed out')), timeoutMs);
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', cutShort);
    stream.once('aborted', cutShort);
    stream.once('close', cutShort);
  });
}

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);
const inflateRaw = promisify(zlib.inflateRaw);
const brotliDecompress = promisify(zlib.brotliDecompress);
const gzip = promisify(zlib.gzip);
const deflate = promisify(zlib.deflate);
const brotliCompress = promisify(zlib.brotliCompress);

/**
 * The body without its content coding, at most `limit` bytes once decoded. Corrupt data is a
 * GatewayFault BODY_UNDECODABLE, more than the limit once decoded (a compression bomb) BODY_OVER_LIMIT.
 */
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
    const tooLarge = (e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || e instanceof RangeError;
    throw tooLarge ? new GatewayFault('BODY_OVER_LIMIT', 'decoded body too large') : new GatewayFault('BODY_UNDECODABLE', 'body cannot be decoded');
  }
}

/** The body in `coding` again; brotli at a moderate quality, since this is on every call's path. */
export async function encodeBody(body: Buffer, coding: Coding): Promise<Buffer> {
  if (coding === 'identity') return body;
  if (coding === 'gzip') return gzip(body);
  if (coding === 'br')
    return brotliCompress(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
  return deflate(body);
}
