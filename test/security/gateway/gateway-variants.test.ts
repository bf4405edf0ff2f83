// Key and path variants against `veil gateway` (real processes): spellings of a selected key or of a
// protecting route's path that frameworks bind or route like the configured one must be protected
// (or refused), never forwarded in clear — also with `unmatched: forward` and wildcard routes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../../helpers/raw-http.ts';
import { bodyOf, rawSend, SECRET_CARD, SECRET_EMAIL, securityFixture, type SecurityFixture } from '../../helpers/gateway-security.ts';
import { CARD, customers, EMAIL, gatewaySection, route } from '../../helpers/gateway-routes.ts';

const SECTION = gatewaySection(
  [
    customers(EMAIL, CARD, "{ select: 'contacts[*].email', field: Customer.email }"),
    route('exact-keys', 'POST', '/exact', { settings: ['keys: exact'], request: [EMAIL] }),
    route('files', 'POST', '/files/:id', { settings: ['pathParameters: true'], request: [EMAIL] }),
    route('api-wildcard', "'*'", '/api/*'),
  ],
  'unmatched: forward',
);

describe('veil gateway: key and path variants', () => {
  let f: SecurityFixture;
  const json = (who = 'ingest') => ['Authorization', `Bearer ${f.tokens[who]}`, 'Content-Type', 'application/json'];

  beforeAll(async () => {
    f = await securityFixture(SECTION);
  }, 60_000);
  afterAll(async () => f?.close());

  const post = async (path: string, body: string, headers = json()) => {
    const since = (await f.lastSeq()) + 1;
    const reply = await call(f.url, 'POST', path, { headers, body });
    return { reply, parsed: await f.received(since) };
  };
  const noCleartext = (parsed: { body: string }[]) => {
    for (const r of parsed) for (const clear of [SECRET_EMAIL, SECRET_CARD, 'b@example.com', 'c@example.com']) expect(bodyOf(r as never)).not.toContain(clear);
  };

  it('protects every case spelling of a selected key, at every level', async () => {
    const { reply, parsed } = await post(
      '/customers',
      JSON.stringify({ Email: SECRET_EMAIL, CARD: { Number: SECRET_CARD }, contacts: [{ EMAIL: 'b@example.com' }], note: 'kept' }),
    );
    expect(reply.status).toBe(200);
    expect(parsed).toHaveLength(1);
    noCleartext(parsed);
    const doc = JSON.parse(bodyOf(parsed[0]!));
    expect(doc.CARD.Number).toMatch(/^4111-11\d\d-\d{4}-1111$/);
    expect(doc.note).toBe('kept');
    // the keys keep the caller's spelling: only values change
    expect(Object.keys(doc)).toEqual(['Email', 'CARD', 'contacts', 'note']);
  });

  it('protects every occurrence of a duplicated key, whatever its case and escapes', async () => {
    const text = `{"email":"${SECRET_EMAIL}","EMAIL":"b@example.com","em\\u0061il":"c@example.com","card":{"number":"${SECRET_CARD}"},"card":{"NUMBER":"${SECRET_CARD}"}}`;
    const { reply, parsed } = await post('/customers', text);
    expect(reply.status).toBe(200);
    expect(parsed).toHaveLength(1);
    noCleartext(parsed);
  });

  it('matches whole keys only: a longer key stays as sent', async () => {
    const { reply, parsed } = await post('/customers', JSON.stringify({ card: { numbers: 'kept', NUMBER: SECRET_CARD } }));
    expect(reply.status).toBe(200);
    noCleartext(parsed);
    expect(JSON.parse(bodyOf(parsed[0]!)).card.numbers).toBe('kept');
  });

  it('keys: exact protects only the exact key (the operator said the upstream binds exactly)', async () => {
    const { parsed } = await post('/exact', JSON.stringify({ email: SECRET_EMAIL, Email: 'plain' }));
    expect(parsed).toHaveLength(1);
    const doc = JSON.parse(bodyOf(parsed[0]!));
    expect(doc.email).not.toBe(SECRET_EMAIL);
    expect(doc.Email).toBe('plain');
  });

  it.each([['/Customers'], ['/CUSTOMERS'], ['/%63ustomers'], ['/%43USTOMERS'], ['/cu%C5%BFtomers']])(
    'the path %s is the protecting route: refused without a token, protected with one, forwarded as /customers',
    async (path) => {
      const body = JSON.stringify({ email: SECRET_EMAIL, card: { number: SECRET_CARD } });
      const anonymous = await post(path, body, ['Content-Type', 'application/json']);
      expect(anonymous.reply.status).toBe(401);
      expect(anonymous.parsed).toHaveLength(0);
      const { reply, parsed } = await post(path, body);
      expect(reply.status).toBe(200);
      expect(parsed.map((r) => r.target)).toEqual(['/customers']);
      noCleartext(parsed);
    },
  );

  it.each([
    ['/customers;x', 'PATH_NOT_CANONICAL'],
    ['/customers;jsessionid=1', 'PATH_NOT_CANONICAL'],
    ['/customers%3Bx', 'PATH_NOT_CANONICAL'],
    ['/customers/', 'PATH_NOT_CANONICAL'],
    ['//customers', 'PATH_NOT_CANONICAL'],
    ['/x/../customers', 'PATH_NOT_CANONICAL'],
    ['/x/%2e%2e/customers', 'PATH_NOT_CANONICAL'],
    ['/x%2F..%2Fcustomers', 'PATH_NOT_CANONICAL'],
    ['/api/..;/customers', 'PATH_NOT_CANONICAL'],
    ['/api/%2e%2e%3b/customers', 'PATH_NOT_CANONICAL'],
    ['/customers%00', 'PATH_NOT_CANONICAL'],
    ['/customers%zz', 'PATH_NOT_CANONICAL'],
    ['/customers\\', 'PATH_NOT_CANONICAL'],
  ])('%s never reaches the upstream (unmatched: forward, wildcard /api/*): %s', async (path, code) => {
    const since = (await f.lastSeq()) + 1;
    const reply = await rawSend(
      f.port,
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${f.port}\r\nContent-Type: application/json\r\nContent-Length: ${SECRET_EMAIL.length + 12}\r\n\r\n{"email":"${SECRET_EMAIL}"}`,
    );
    expect(reply.codes).toEqual([code]);
    expect(await f.received(since)).toHaveLength(0);
  });

  it('a route with pathParameters takes ; parameters, matched without them and forwarded as sent', async () => {
    const { parsed } = await post('/FILES;v=1/7;rev=2', JSON.stringify({ email: SECRET_EMAIL }));
    expect(parsed.map((r) => r.target)).toEqual(['/files;v=1/7;rev=2']);
    noCleartext(parsed);
  });

  it('unmatched and wildcard paths are forwarded in their normal form', async () => {
    const { parsed } = await post('/api/%7Euser/%41', '{}', ['Content-Type', 'application/json']);
    expect(parsed.map((r) => r.target)).toEqual(['/api/~user/A']);
    const other = await post('/elsewhere/a%20b', '{}', ['Content-Type', 'application/json']);
    expect(other.parsed.map((r) => r.target)).toEqual(['/elsewhere/a%20b']);
  });
});
