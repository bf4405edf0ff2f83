import { describe, expect, it } from 'vitest';
import {
  codingOf,
  connectionTokens,
  decodableAcceptEncoding,
  endToEnd,
  headerValue,
  headerValues,
  isJsonMediaType,
  weakenEtag,
} from '../../src/gateway/headers.ts';

describe('gateway header handling', () => {
  it('drops hop-by-hop headers and those Connection names, keeps the rest in order with case and repeats', () => {
    const raw = [
      'Host',
      'gw',
      'Connection',
      'keep-alive, X-Private',
      'connection',
      'X-Other',
      'Keep-Alive',
      'timeout=5',
      'Proxy-Authorization',
      'Basic x',
      'Proxy-Connection',
      'keep-alive',
      'TE',
      'trailers',
      'Trailer',
      'X-Sum',
      'Transfer-Encoding',
      'chunked',
      'Upgrade',
      'websocket',
      'X-Private',
      'p',
      'x-other',
      'o',
      'Set-Cookie',
      'a=1',
      'X-Keep',
      'k',
      'set-cookie',
      'b=2',
    ];
    expect(endToEnd(raw)).toEqual(['Host', 'gw', 'Set-Cookie', 'a=1', 'X-Keep', 'k', 'set-cookie', 'b=2']);
    expect(endToEnd(raw, new Set(['host']))).toEqual(['Set-Cookie', 'a=1', 'X-Keep', 'k', 'set-cookie', 'b=2']);
    expect([...connectionTokens(raw)].sort()).toEqual(['keep-alive', 'x-other', 'x-private']);
  });

  it('reads headers case-insensitively', () => {
    const raw = ['Accept', 'a', 'ACCEPT', 'b'];
    expect(headerValue(raw, 'accept')).toBe('a');
    expect(headerValues(raw, 'Accept')).toBe('a, b');
    expect(headerValues(raw, 'missing')).toBeUndefined();
  });

  it('knows which content codings it can rewrite', () => {
    expect(codingOf([])).toBe('identity');
    expect(codingOf(['Content-Encoding', 'identity'])).toBe('identity');
    expect(codingOf(['Content-Encoding', 'GZIP'])).toBe('gzip');
    expect(codingOf(['content-encoding', 'x-gzip'])).toBe('gzip');
    expect(codingOf(['Content-Encoding', 'br'])).toBe('br');
    expect(codingOf(['Content-Encoding', 'deflate'])).toBe('deflate');
    expect(codingOf(['Content-Encoding', 'zstd'])).toBeUndefined();
    expect(codingOf(['Content-Encoding', 'gzip, br'])).toBeUndefined();
    expect(codingOf(['Content-Encoding', 'gzip', 'Content-Encoding', 'gzip'])).toBeUndefined();
  });

  it('narrows Accept-Encoding to codings it can decode', () => {
    expect(decodableAcceptEncoding(undefined)).toBeUndefined();
    expect(decodableAcceptEncoding('zstd, br;q=1.0, gzip;q=0.5, compress')).toBe('br;q=1.0, gzip;q=0.5');
    expect(decodableAcceptEncoding('zstd')).toBe('identity');
    expect(decodableAcceptEncoding('*')).toBe('identity');
  });

  it('recognizes JSON media types', () => {
    for (const t of ['application/json', 'application/json; charset=utf-8', 'Application/JSON', 'application/problem+json', 'application/vnd.api+json'])
      expect(isJsonMediaType(t), t).toBe(true);
    for (const t of [undefined, 'text/plain', 'application/jsonp', 'text/json+html', 'multipart/form-data']) expect(isJsonMediaType(t), String(t)).toBe(false);
  });

  it('weakens strong ETags only', () => {
    expect(weakenEtag('"v1"')).toBe('W/"v1"');
    expect(weakenEtag('W/"v1"')).toBe('W/"v1"');
  });
});
