import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_CONFIG_TEXT } from '../../helpers/engine-fixture.ts';
import { startVeilServe, type VeilProcess } from '../../helpers/veil-process.ts';

const CARD = '4111111111111111';
const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const bodyFor = (role: string, action: string) =>
  JSON.stringify({
    rightsContexts: [{ guid: guid(1), evidences: [{ name: 'Role', value: role }] }],
    processingContexts: [{ guid: guid(2), evidences: [{ name: 'Action', value: action }] }],
    requests: [
      { guid: guid(3), rightsContext: guid(1), processingContext: guid(2), instances: [{ className: 'Customer', propertyName: 'cardNumber', value: CARD }] },
    ],
  });
const BODY = bodyFor('ingest', 'Protect');

/**
 * POST /transform as bytes on a socket, the way an attacker frames it: a body that arrived whole
 * (which skips the body-read deadline's stream copy) in every framing Node accepts, and the
 * ambiguous ones it must refuse. Each connection's status lines are read for a while; the
 * service's log (at info, request logging on) never holds the card number or the token.
 */
describe('POST /transform framed by an attacker (real socket)', () => {
  let veil: VeilProcess;
  let token = '';
  const port = () => Number(new URL(veil.url).port);
  const statuses = (raw: string, waitMs = 700) =>
    new Promise<number[]>((resolve) => {
      const socket = connect(port(), '127.0.0.1');
      let out = '';
      socket.on('data', (d) => (out += String(d)));
      socket.on('error', () => undefined);
      socket.write(raw, 'latin1');
      setTimeout(() => {
        socket.destroy();
        resolve([...out.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => Number(m[1])));
      }, waitMs);
    });
  const post = (headers: string, body: string, path = '/transform', auth = true) =>
    `POST ${path} HTTP/1.1\r\nHost: veil\r\nContent-Type: application/json\r\n${auth ? `Authorization: Bearer ${token}\r\n` : ''}${headers}\r\n${body}`;
  const chunked = (body: string) => `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;

  beforeAll(async () => {
    veil = await startVeilServe({ configText: EXAMPLE_CONFIG_TEXT, env: { VEIL_LOG_LEVEL: 'info' } });
    const secret = (await readFile(join(veil.dataDir, 'dev-client.secret'), 'utf8')).trim();
    const answer = await veil.request('/connect/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: secret }).toString(),
    });
    token = (JSON.parse(answer.text) as { access_token: string }).access_token;
  }, 60_000);
  afterAll(async () => veil?.stop());

  it.each([
    ['a whole body with Content-Length', () => post(`Content-Length: ${BODY.length}\r\n`, BODY), [200]],
    ['a whole chunked body in one packet', () => post('Transfer-Encoding: chunked\r\n', chunked(BODY)), [200]],
    ['no token', () => post(`Content-Length: ${BODY.length}\r\n`, BODY, '/transform', false), [401]],
    ['the wrong role (Unprotect as ingest)', () => post(`Content-Length: ${bodyFor('ingest', 'Unprotect').length}\r\n`, bodyFor('ingest', 'Unprotect')), [403]],
    ['Content-Length and chunked together', () => post('Content-Length: 5\r\nTransfer-Encoding: chunked\r\n', chunked(BODY)), [400]],
    ['two Content-Lengths', () => post(`Content-Length: ${BODY.length}\r\nContent-Length: ${BODY.length + 1}\r\n`, BODY), [400]],
    ['a Content-Length short of the body: the rest is no request', () => post(`Content-Length: ${BODY.length - 10}\r\n`, BODY), [400]],
    ['a UTF-16 body', () => post(`Content-Length: ${Buffer.byteLength(BODY, 'utf16le')}\r\n`, Buffer.from(BODY, 'utf16le').toString('latin1')), [400]],
    ['a path in capitals', () => post(`Content-Length: ${BODY.length}\r\n`, BODY, '/TRANSFORM'), [404]],
    // %74 is an unreserved character: the same resource (RFC 3986 §6.2.2.2), under the same door
    ['a percent-encoded path with the token', () => post(`Content-Length: ${BODY.length}\r\n`, BODY, '/%74ransform'), [200]],
    ['a percent-encoded path without it', () => post(`Content-Length: ${BODY.length}\r\n`, BODY, '/%74ransform', false), [401]],
  ])('%s', async (_, raw, expected) => {
    expect(await statuses(raw())).toEqual(expected);
  });

  it('a body still on its way gets no answer before it arrives (the deadline is kept)', async () => {
    expect(await statuses(post('Content-Length: 1000\r\n', BODY.slice(0, 10)))).toEqual([]);
  });

  it('the log holds neither the card number nor the token', () => {
    expect(veil.output()).not.toContain(CARD);
    expect(veil.output()).not.toContain(token);
  });
});
