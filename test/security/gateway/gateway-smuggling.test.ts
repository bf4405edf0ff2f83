// Request smuggling against `veil gateway`, as real processes: raw bytes on a socket to the gateway,
// and an upstream with a lenient parser that records every request it parses. Each attack asserts
// the refusal (status, code), how many requests the upstream parsed, and that none of them holds a
// protected field's cleartext.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bodyOf,
  headerNames,
  headerOf,
  rawSend,
  SECRET_CARD,
  SECRET_EMAIL,
  securityFixture,
  type RawReply,
  type SecurityFixture,
} from '../../helpers/gateway-security.ts';
import { CARD, customers, EMAIL, gatewaySection, SEC, STATIC } from '../../helpers/gateway-routes.ts';

const SECTION = gatewaySection([customers(EMAIL, CARD), STATIC, SEC]);

const secret = JSON.stringify({ email: SECRET_EMAIL, card: { number: SECRET_CARD } });
/** a whole request to a protecting route, unauthenticated: what a smuggler wants the upstream to parse */
const SMUGGLED = `POST /customers HTTP/1.1\r\nHost: app\r\nContent-Type: application/json\r\nContent-Length: ${secret.length}\r\n\r\n${secret}`;
const chunk = (data: string) => `${data.length.toString(16)}\r\n${data}\r\n`;

describe('veil gateway: request smuggling', () => {
  let f: SecurityFixture;
  let host: string;

  beforeAll(async () => {
    f = await securityFixture(SECTION);
    host = `127.0.0.1:${f.port}`;
  }, 60_000);
  afterAll(async () => f?.close());

  /** sends the bytes and returns the reply with the requests the upstream parsed meanwhile */
  const attack = async (bytes: string | string[], options: { gapMs?: number; idleMs?: number } = {}) => {
    const since = (await f.lastSeq()) + 1;
    const reply = await rawSend(f.port, bytes, options);
    const parsed = await f.received(since);
    for (const r of parsed) {
      // a body of a route without selectors may hold anything; the protecting route's never a cleartext
      if (r.target.split('?')[0]!.toLowerCase() === '/customers') {
        expect(bodyOf(r)).not.toContain(SECRET_EMAIL);
        expect(bodyOf(r)).not.toContain(SECRET_CARD);
      }
      // everything the upstream parsed was relayed to this caller as the answer to its request
      expect(reply.seqs).toContain(r.seq);
    }
    return { reply, parsed };
  };
  const refused = (r: { reply: RawReply; parsed: unknown[] }, status: number, code: string) => {
    expect(r.reply.statuses).toEqual([status]);
    expect(r.reply.codes).toEqual([code]);
    expect(r.reply.closed).toBe(true);
    expect(r.parsed).toHaveLength(0);
  };

  it('the issue: GET on a route without selectors, chunked, a request in the body — refused, nothing forwarded', async () => {
    const r = await attack(`GET /static/x HTTP/1.1\r\nHost: ${host}\r\nTransfer-Encoding: chunked\r\n\r\n${chunk(SMUGGLED)}0\r\n\r\n`);
    refused(r, 400, 'BODY_NOT_ALLOWED');
    refused(await attack(`GET /static/x HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${SMUGGLED.length}\r\n\r\n${SMUGGLED}`), 400, 'BODY_NOT_ALLOWED');
    refused(await attack(`DELETE /sec/x HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${SMUGGLED.length}\r\n\r\n${SMUGGLED}`), 404, 'NOT_FOUND');
  });

  it('a request in the body of a route that takes bodies stays that body: one request upstream, framed by the gateway', async () => {
    for (const framing of ['length', 'chunked'] as const) {
      const head = `POST /sec/upload HTTP/1.1\r\nHost: ${host}\r\nContent-Type: text/plain\r\n`;
      const bytes =
        framing === 'length'
          ? `${head}Content-Length: ${SMUGGLED.length}\r\n\r\n${SMUGGLED}`
          : `${head}Transfer-Encoding: chunked\r\n\r\n${chunk(SMUGGLED.slice(0, 10))}${chunk(SMUGGLED.slice(10))}0\r\n\r\n`;
      const since = (await f.lastSeq()) + 1;
      const reply = await rawSend(f.port, bytes);
      const parsed = await f.received(since);
      expect(reply.statuses).toEqual([200]);
      expect(parsed).toHaveLength(1);
      expect(parsed[0]!.target).toBe('/sec/upload');
      expect(bodyOf(parsed[0]!)).toBe(SMUGGLED);
      expect(reply.seqs).toEqual([parsed[0]!.seq]);
      if (framing === 'length') expect(headerOf(parsed[0]!, 'content-length')).toBe(String(SMUGGLED.length));
      else expect([headerOf(parsed[0]!, 'transfer-encoding'), headerOf(parsed[0]!, 'content-length')]).toEqual(['chunked', undefined]);
    }
  });

  it('CL.TE and TE.CL: both framing headers — refused by the parser, connection closed', async () => {
    const body = `0\r\n\r\n${SMUGGLED}`;
    refused(
      await attack(`POST /sec/a HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${body.length}\r\nTransfer-Encoding: chunked\r\n\r\n${body}`),
      400,
      'REQUEST_FRAMING_INVALID',
    );
    refused(
      await attack(`POST /sec/a HTTP/1.1\r\nHost: ${host}\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n${chunk(SMUGGLED)}0\r\n\r\n`),
      400,
      'REQUEST_FRAMING_INVALID',
    );
  });

  it.each([
    ['xchunked', 'Transfer-Encoding: xchunked'],
    ['chunked, identity', 'Transfer-Encoding: chunked, identity'],
    ['identity, chunked', 'Transfer-Encoding: identity, chunked'],
    ['gzip, chunked', 'Transfer-Encoding: gzip, chunked'],
    ['chunked, chunked', 'Transfer-Encoding: chunked, chunked'],
    ['two headers', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked'],
    ['chunked then identity', 'Transfer-Encoding: chunked\r\nTransfer-encoding: identity'],
    ['space before colon', 'Transfer-Encoding : chunked'],
    ['vertical tab', 'Transfer-Encoding: \x0bchunked'],
    ['obs-fold', 'Transfer-Encoding:\r\n chunked'],
    ['x-prefixed name', 'X-Transfer-Encoding: chunked\r\nTransfer-Encoding: x'],
  ])('TE.TE %s: refused 400 REQUEST_FRAMING_INVALID, nothing forwarded', async (_name, te) => {
    refused(await attack(`POST /sec/a HTTP/1.1\r\nHost: ${host}\r\n${te}\r\n\r\n${chunk(SMUGGLED)}0\r\n\r\n`), 400, 'REQUEST_FRAMING_INVALID');
  });

  it.each([
    ['leading space', 'Transfer-Encoding:  chunked'],
    ['tab', 'Transfer-Encoding:\tchunked'],
    ['upper case', 'Transfer-Encoding: CHUNKED'],
    ['trailing space', 'Transfer-Encoding: chunked '],
  ])("TE.TE %s: one unambiguous reading, forwarded once with the gateway's own chunked framing", async (_name, te) => {
    const r = await attack(`POST /sec/a HTTP/1.1\r\nHost: ${host}\r\n${te}\r\n\r\n${chunk(SMUGGLED)}0\r\n\r\n`);
    expect(r.reply.statuses).toEqual([200]);
    expect(r.parsed).toHaveLength(1);
    expect(bodyOf(r.parsed[0]!)).toBe(SMUGGLED);
    expect(headerOf(r.parsed[0]!, 'transfer-encoding')).toBe('chunked');
  });

  it('chunk extensions are dropped, never passed on; malformed ones and bad chunk sizes are refused', async () => {
    const ok = await attack(`POST /sec/a HTTP/1.1\r\nHost: ${host}\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1;x\r\nhello\r\n0;last\r\n\r\n`);
    expect(ok.reply.statuses).toEqual([200]);
    expect(ok.parsed.map(bodyOf)).toEqual(['hello']);
    for (const body of [
      '5;a="b\r\n"\r\nhello\r\n0\r\n\r\n',
      '5 \r\nhello\r\n0\r\n\r\n',
      '0x5\r\nhello\r\n0\r\n\r\n',
      '5\r\nhelloX0\r\n\r\n',
      'fffffffffffffffff\r\nhello\r\n0\r\n\r\n',
    ]) {
      refused(await attack(`POST /sec/a HTTP/1.1\r\nHost: ${host}\r\nTransfer-Encoding: chunked\r\n\r\n${body}${SMUGGLED}`), 400, 'REQUEST_FRAMING_INVALID');
    }
  });

  it('bare LF and bare CR as line ends, in headers and in chunks: refused', async () => {
    refused(await attack(`POST /sec/a HTTP/1.1\nHost: ${host}\nContent-Length: 0\n\n`), 400, 'REQUEST_FRAMING_INVALID');
    refused(await attack(`POST /sec/a HTTP/1.1\r\nHost: ${host}\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`), 400, 'REQUEST_FRAMING_INVALID');
    refused(await attack(`POST /sec/a HTTP/1.1\r\nHost: ${host}\rTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`), 400, 'REQUEST_FRAMING_INVALID');
    refused(
      await attack(`POST /sec/a HTTP/1.1\r\nHost: ${host}\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n${SMUGGLED}`),
      400,
      'REQUEST_FRAMING_INVALID',
    );
  });

  it('obs-fold in any header: refused', async () => {
    refused(await attack(`GET /sec/a HTTP/1.1\r\nHost: ${host}\r\nX-A: 1\r\n Content-Length: 5\r\n\r\nhello`), 400, 'REQUEST_FRAMING_INVALID');
  });

  it("duplicate and malformed Content-Length: refused; leading zeros forwarded as the gateway's own length", async () => {
    for (const cl of [
      'Content-Length: 5\r\nContent-Length: 5',
      'Content-Length: 5\r\nContent-Length: 50',
      'Content-Length: 5, 5',
      'Content-Length: +5',
      'Content-Length: 0x5',
      'Content-Length: 5 5',
      'Content-Length: 99999999999999999999',
    ]) {
      refused(await attack(`POST /sec/a HTTP/1.1\r\nHost: ${host}\r\n${cl}\r\n\r\nhello${SMUGGLED}`), 400, 'REQUEST_FRAMING_INVALID');
    }
    const zeros = await attack(`POST /sec/a HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 005\r\n\r\nhello`);
    expect(zeros.reply.statuses).toEqual([200]);
    expect(zeros.parsed.map((r) => headerOf(r, 'content-length'))).toEqual(['5']);
  });

  it('Transfer-Encoding on HTTP/1.0 and a duplicate or missing Host: refused', async () => {
    refused(
      await attack(`POST /sec/a HTTP/1.0\r\nHost: ${host}\r\nTransfer-Encoding: chunked\r\n\r\n${chunk(SMUGGLED)}0\r\n\r\n`),
      400,
      'REQUEST_FRAMING_INVALID',
    );
    refused(await attack(`POST /sec/a HTTP/1.1\r\nHost: ${host}\r\nHost: evil\r\nContent-Length: 0\r\n\r\n`), 400, 'REQUEST_TARGET_INVALID');
    refused(await attack(`POST /sec/a HTTP/1.0\r\nContent-Length: 0\r\n\r\n`), 400, 'REQUEST_TARGET_INVALID');
  });

  it('absolute-form: another authority than Host is refused; the same one is forwarded in origin form', async () => {
    refused(
      await attack(
        `POST http://evil.example/customers HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${secret.length}\r\n\r\n${secret}`,
      ),
      400,
      'REQUEST_TARGET_INVALID',
    );
    refused(await attack(`GET * HTTP/1.1\r\nHost: ${host}\r\n\r\n`), 400, 'REQUEST_TARGET_INVALID');
    refused(await attack(`GET /sec/a#frag HTTP/1.1\r\nHost: ${host}\r\n\r\n`), 400, 'REQUEST_TARGET_INVALID');
    const same = await attack(`GET http://${host}/sec/abs?q=1 HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    expect(same.reply.statuses).toEqual([200]);
    expect(same.parsed.map((r) => r.target)).toEqual(['/sec/abs?q=1']);
    // the absolute form of a protecting route is that route: protected or refused, never forwarded in clear
    const viaAbsolute = await attack(
      `POST http://${host}/customers HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${secret.length}\r\n\r\n${secret}`,
    );
    expect(viaAbsolute.reply.codes).toEqual(['TOKEN_MISSING']);
    expect(viaAbsolute.parsed).toHaveLength(0);
  });

  it('Expect: 100-continue — no 100 before the gateway accepted the request; the body is read only then', async () => {
    const head = (auth: string) =>
      `POST /customers HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n${auth}Expect: 100-continue\r\nContent-Length: ${secret.length}\r\n\r\n`;
    // refused without a token: final answer at once, no 100, the connection closed (the body may never come)
    const noToken = await attack([head(''), secret + SMUGGLED], { gapMs: 300 });
    expect(noToken.reply.statuses).toEqual([401]);
    expect(noToken.reply.codes).toEqual(['TOKEN_MISSING']);
    expect(noToken.reply.closed).toBe(true);
    expect(noToken.parsed).toHaveLength(0);
    // accepted: 100 Continue, then the body, protected before the upstream sees it (which never sees Expect)
    const ok = await attack([head(`Authorization: Bearer ${f.tokens.ingest}\r\n`), secret], { gapMs: 300 });
    expect(ok.reply.statuses).toEqual([100, 200]);
    expect(ok.parsed).toHaveLength(1);
    expect(headerNames(ok.parsed[0]!)).not.toContain('expect');
    const other = await attack(`POST /sec/a HTTP/1.1\r\nHost: ${host}\r\nExpect: 200-ok\r\nContent-Length: 5\r\n\r\nhello`);
    refused(other, 417, 'EXPECTATION_FAILED');
  });

  it('pipelined requests are each routed on their own; one refusal closes the connection before the rest is read', async () => {
    const get = (p: string) => `GET ${p} HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
    const ok = await attack(get('/sec/1') + get('/sec/2') + `POST /sec/3 HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 5\r\n\r\nhello`);
    expect(ok.reply.statuses).toEqual([200, 200, 200]);
    expect(ok.parsed.map((r) => r.target)).toEqual(['/sec/1', '/sec/2', '/sec/3']);
    const cut = await attack(
      get('/sec/4') + `GET /static/x HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${SMUGGLED.length}\r\n\r\n${SMUGGLED}` + get('/sec/5'),
    );
    expect(cut.reply.statuses).toEqual([200, 400]);
    expect(cut.reply.codes).toEqual(['BODY_NOT_ALLOWED']);
    expect(cut.parsed.map((r) => r.target)).toEqual(['/sec/4']);
  });

  it('CONNECT, the HTTP/2 preface and oversized headers get an answer and a closed connection, never a tunnel', async () => {
    refused(await attack(`CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n`), 405, 'METHOD_NOT_ALLOWED');
    refused(await attack('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), 400, 'REQUEST_FRAMING_INVALID');
    refused(await attack(`GET /sec/a HTTP/1.1\r\nHost: ${host}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`), 431, 'HEADERS_TOO_LARGE');
  });

  it('the upstream never failed to parse what the gateway sent', async () => {
    expect(await f.upstreamErrors()).toEqual([]);
  });
});
