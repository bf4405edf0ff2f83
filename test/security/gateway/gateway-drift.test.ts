// Producer drift against `veil gateway` (issue 28), as real processes: a client sends personal
// data at paths the route's selectors do not name (`emailAddress`, `contact.email`, a card as a
// JSON number, an email as an object key, a typo, …). The unmapped guard refuses it (default:
// 422 UNMAPPED_PERSONAL_DATA naming the path and kind, nothing forwarded) or, for the kinds a
// route protects, protects it like a selected value. Proven on what the upstream parsed: its
// recorded raw bytes (decoded where gzip) are searched for every value sent as personal data.
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSum } from '../../helpers/prometheus.ts';
import { call, type Reply } from '../../helpers/raw-http.ts';
import { headerOf, securityFixture, type Recorded, type SecurityFixture } from '../../helpers/gateway-security.ts';

const SELECTORS = `      request:
        - { select: email, field: Customer.email }
        - { select: card.number, field: Customer.cardNumber }
        - { select: name, field: Customer.name }
`;
// the gateway's default spelled out, a route that protects emails and cards it finds, and a control route without the guard
const SECTION = `  unmapped: refuse
  routes:
    - name: customers
      method: POST
      path: /customers
${SELECTORS}    - name: protecting
      method: POST
      path: /customers-protect
      unmapped: { action: protect, protect: { email: Customer.email, payment-card: Customer.cardNumber } }
${SELECTORS}    - name: passing
      method: POST
      path: /customers-pass
      unmapped: pass
${SELECTORS}`;

interface Drift {
  name: string;
  /** the body as sent */
  text: string;
  /** the personal value(s) in every form that would show it in clear (as sent, decoded, digits only) */
  clear: string[];
  path: string;
  kind: string;
  pointer: string;
  /** the protecting route protects it (an email or card value); anything else is refused there too */
  protectable: boolean;
}

const drift = (name: string, doc: unknown, clear: string[], path: string, kind: string, pointer: string, protectable: boolean): Drift => ({
  name,
  text: typeof doc === 'string' ? doc : JSON.stringify(doc),
  clear,
  path,
  kind,
  pointer,
  protectable,
});

const DRIFTS: Drift[] = [
  drift(
    'emailAddress',
    { email: 'known-a@example.com', emailAddress: 'drift-a@example.com', plan: 'gold' },
    ['drift-a@example.com'],
    'emailAddress',
    'email',
    '/emailAddress',
    true,
  ),
  drift(
    'cardNumber (string)',
    { cardNumber: '4012-8888-8888-1881' },
    ['4012-8888-8888-1881', '4012888888881881'],
    'cardNumber',
    'payment-card',
    '/cardNumber',
    true,
  ),
  drift('cardNumber (JSON number)', '{"cardNumber": 4111111111111111, "qty": 2}', ['4111111111111111'], 'cardNumber', 'payment-card', '/cardNumber', true),
  drift(
    'contact.email',
    { contact: { email: 'drift-c@example.com', preferred: true } },
    ['drift-c@example.com'],
    'contact.email',
    'email',
    '/contact/email',
    true,
  ),
  drift(
    'payment.card.number',
    { payment: { card: { number: '5500 0000 0000 0004', expiry: '12/29' } } },
    ['5500 0000 0000 0004', '5500000000000004'],
    'payment.card.number',
    'payment-card',
    '/payment/card/number',
    true,
  ),
  drift(
    'backupEmail',
    { email: 'known-e@example.com', backupEmail: 'drift-e@example.com' },
    ['drift-e@example.com'],
    'backupEmail',
    'email',
    '/backupEmail',
    true,
  ),
  drift('iban', { iban: 'GB82 WEST 1234 5698 7654 32' }, ['GB82 WEST 1234 5698 7654 32', 'GB82WEST12345698765432'], 'iban', 'iban', '/iban', false),
  drift(
    'profile.contacts[].email',
    {
      profile: {
        contacts: [
          { type: 'work', email: 'drift-g1@example.com' },
          { type: 'home', email: 'drift-g2@example.com' },
        ],
      },
    },
    ['drift-g1@example.com', 'drift-g2@example.com'],
    'profile.contacts[*].email',
    'email',
    '/profile/contacts/0/email',
    true,
  ),
  drift(
    'an email as an object key',
    { visitsByEmail: { 'drift-h@example.com': 3 } },
    ['drift-h@example.com'],
    'visitsByEmail.*',
    'email',
    '/visitsByEmail',
    false,
  ),
  drift('a path typo', { emial: 'drift-i@example.com' }, ['drift-i@example.com'], 'emial', 'email', '/emial', true),
  drift(
    'a path typo under a selected object',
    { card: { nubmer: '6011 1111 1111 1117' } },
    ['6011 1111 1111 1117', '6011111111111117'],
    'card.nubmer',
    'payment-card',
    '/card/nubmer',
    true,
  ),
  drift('a \\u-escaped key', '{"em\\u0061ilAddress":"drift-j@example.com"}', ['drift-j@example.com'], 'emailAddress', 'email', '/emailAddress', true),
  drift(
    'a \\u-escaped value',
    '{"contact":{"email":"drift-k\\u0040example.com"}}',
    ['drift-k@example.com', 'drift-k\\u0040example.com'],
    'contact.email',
    'email',
    '/contact/email',
    true,
  ),
  drift('a national id', { nino: 'AB 12 34 56 C' }, ['AB 12 34 56 C', 'AB123456C'], 'nino', 'uk-nino', '/nino', false),
  drift('a phone in a field named so', { mobilePhone: '+44 20 7946 0958' }, ['+44 20 7946 0958'], 'mobilePhone', 'phone', '/mobilePhone', false),
  drift('a person name in a field named so', { fullName: 'Grace Hopper' }, ['Grace Hopper'], 'fullName', 'person-name', '/fullName', false),
];

// Decoys: identifiers, codes and numbers that look like data but are not personal, and free text.
// Sent as they are, they pass through byte for byte (spacing, escapes and number spellings too).
const DECOYS = `{"id": "3f2b8c1e-9a4d-4e2b-8f6a-1c2d3e4f5a6b", "orderId": "ORD-2024-000123", "ref": "4111111111111112", "refNumber": 4111111111111112,
  "sku": "SKU-88213-XL", "version": "2024.11.27-rc.1", "postcode": "SW1A 1AA", "zip": "90210-1234", "at": "2024-11-27T03:28:34.123Z",
  "ts": 1732678114123, "total": 129.90, "big": 12345678901234567890, "lines": [{"sku": "A-1", "qty": 2}, {"sku": "B-7", "qty": 1.0}],
  "text": "Please call Grace about order 42 \\u2014 she prefers mornings", "name_of_product": "Widget"}`;
// What the guard cannot see (docs/gateway.md): personal data inside free text, and a name in a field whose name does not say so.
const BLIND = '{"note": "mail me at blind-spot@example.com", "label": "Ada Lovelace"}';

describe('veil gateway: the unmapped guard against producer drift', () => {
  let f: SecurityFixture;
  const firstSeq = { value: 0 };
  const json = () => ['Authorization', `Bearer ${f.tokens.ingest}`, 'Content-Type', 'application/json'];

  beforeAll(async () => {
    f = await securityFixture(SECTION);
    firstSeq.value = (await f.lastSeq()) + 1;
  }, 60_000);
  afterAll(async () => f?.close());

  const post = async (path: string, body: string | Buffer, headers: string[] = []) => {
    const since = (await f.lastSeq()) + 1;
    const reply = await call(f.url, 'POST', path, { headers: [...json(), ...headers], body });
    return { reply, parsed: await f.received(since) };
  };
  const problem = (reply: Reply) =>
    JSON.parse(reply.body.toString('utf8')) as {
      status: number;
      code: string;
      pointer: string;
      detail: string;
      errors: { pointer: string; message: string }[];
      unmapped: { path: string; kind: string; pointer: string; key: boolean }[];
    };
  /** a recorded body as the application reads it: decoded when gzip */
  const decoded = (r: Recorded) => {
    const raw = Buffer.from(r.body, 'base64');
    return (headerOf(r, 'content-encoding') === 'gzip' ? zlib.gunzipSync(raw) : raw).toString('utf8');
  };
  /** every place a recorded request could carry a value in clear: target, headers, raw and decoded body */
  const recordedText = (r: Recorded) => [r.target, ...r.rawHeaders, Buffer.from(r.body, 'base64').toString('latin1'), decoded(r)].join('\n');
  const noValueIn = (reply: Reply, clear: readonly string[]) => {
    const text = [reply.body.toString('utf8'), ...reply.rawHeaders].join('\n');
    for (const c of clear) expect(text).not.toContain(c);
  };
  const at = (doc: unknown, pointer: string): unknown =>
    pointer
      .split('/')
      .slice(1)
      .reduce((node: unknown, k) => (node as Record<string, unknown>)?.[k], doc);

  it.each(DRIFTS)('refuses $name: 422 UNMAPPED_PERSONAL_DATA naming the path and kind, nothing forwarded', async (d) => {
    const { reply, parsed } = await post('/customers', d.text);
    expect(reply.status).toBe(422);
    expect(reply.headers['content-type']).toBe('application/problem+json');
    const p = problem(reply);
    expect([p.code, p.pointer]).toEqual(['UNMAPPED_PERSONAL_DATA', d.pointer]);
    expect(p.unmapped[0]).toEqual({ path: d.path, kind: d.kind, pointer: d.pointer, key: d.name.includes('object key') });
    expect(p.errors[0]!.message).toContain(`${d.path} holds personal data (${d.kind})`);
    expect(parsed).toHaveLength(0);
    noValueIn(reply, d.clear);
  });

  it.each(DRIFTS)("with action protect, $name is protected as its kind's field, or still refused", async (d) => {
    const { reply, parsed } = await post('/customers-protect', d.text);
    noValueIn(reply, d.clear);
    if (!d.protectable) {
      expect(reply.status).toBe(422);
      expect(problem(reply).unmapped[0]).toMatchObject({ path: d.path, kind: d.kind });
      expect(parsed).toHaveLength(0);
      return;
    }
    expect(reply.status).toBe(200);
    expect(parsed).toHaveLength(1);
    const doc = JSON.parse(decoded(parsed[0]!));
    const value = at(doc, d.pointer);
    // protected: a string (a JSON number becomes one), not the cleartext; a card keeps its format (FF1)
    expect(typeof value).toBe('string');
    expect(d.clear).not.toContain(value);
    if (d.kind === 'payment-card') expect(value).toMatch(/^[\d -]+$/);
    for (const c of d.clear) expect(recordedText(parsed[0]!)).not.toContain(c);
  });

  it("the case variant `Email` is the selector's: protected as Customer.email, not refused", async () => {
    for (const path of ['/customers', '/customers-protect']) {
      const { reply, parsed } = await post(path, '{"Email":"drift-v@example.com","CARD":{"NUMBER":"3530 1113 3330 0000"},"\\u0045MAIL":"drift-w@example.com"}');
      expect(reply.status).toBe(200);
      expect(parsed).toHaveLength(1);
      const doc = JSON.parse(decoded(parsed[0]!));
      expect(Object.keys(doc)).toEqual(['Email', 'CARD', 'EMAIL']);
      expect(doc.Email).not.toBe('drift-v@example.com');
      expect(doc.CARD.NUMBER).toMatch(/^3530 11\d\d \d{4} 0000$/);
      for (const c of ['drift-v@example.com', 'drift-w@example.com', '3530 1113 3330 0000']) expect(recordedText(parsed[0]!)).not.toContain(c);
    }
  });

  it("protects a finding with the caller's roles: a kind's field they may not protect refuses the request at the value's pointer", async () => {
    // role support may protect Customer.email, not Customer.cardNumber
    const since = (await f.lastSeq()) + 1;
    const reply = await call(f.url, 'POST', '/customers-protect', {
      headers: ['Authorization', `Bearer ${f.tokens.support}`, 'Content-Type', 'application/json'],
      body: JSON.stringify({ email: 'known-s@example.com', contact: { email: 'drift-s@example.com' }, wallet: [{ pan: '4000 0566 5566 5556' }] }),
    });
    expect(reply.status).toBe(403);
    const p = problem(reply);
    expect([p.code, p.pointer]).toEqual(['ACTION_NOT_GRANTED', '/wallet/0/pan']);
    noValueIn(reply, ['drift-s@example.com', '4000 0566 5566 5556', 'known-s@example.com']);
    expect(await f.received(since)).toHaveLength(0);
  });

  it('reads gzip bodies: a drift in a gzip body is refused, or protected and re-encoded', async () => {
    const gz = (doc: unknown) => zlib.gzipSync(Buffer.from(JSON.stringify(doc)));
    const refused = await post('/customers', gz({ emailAddress: 'drift-z1@example.com' }), ['Content-Encoding', 'gzip']);
    expect(refused.reply.status).toBe(422);
    expect(problem(refused.reply).unmapped).toEqual([{ path: 'emailAddress', kind: 'email', pointer: '/emailAddress', key: false }]);
    expect(refused.parsed).toHaveLength(0);
    const protectedOne = await post('/customers-protect', gz({ contact: { email: 'drift-z2@example.com' }, note: 'kept' }), ['Content-Encoding', 'gzip']);
    expect(protectedOne.reply.status).toBe(200);
    const r = protectedOne.parsed[0]!;
    expect(headerOf(r, 'content-encoding')).toBe('gzip');
    const doc = JSON.parse(decoded(r));
    expect(doc.note).toBe('kept');
    expect(doc.contact.email).not.toBe('drift-z2@example.com');
    expect(recordedText(r)).not.toContain('drift-z2@example.com');
  });

  it('names every finding of a body, up to 16, never a value', async () => {
    const doc = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`alt${i}`, `many-${i}@example.com`]));
    const { reply, parsed } = await post('/customers', JSON.stringify(doc));
    expect(reply.status).toBe(422);
    const p = problem(reply);
    expect(p.unmapped.map((u) => u.path)).toEqual(Array.from({ length: 16 }, (_, i) => `alt${i}`));
    expect(p.detail).toMatch(/^16 or more unmapped paths hold personal data/);
    expect(parsed).toHaveLength(0);
    noValueIn(reply, Object.values(doc));
    // with action protect all twenty are protected, none passes in clear past the sixteenth
    const all = await post('/customers-protect', JSON.stringify(doc));
    expect(all.reply.status).toBe(200);
    for (const v of Object.values(doc)) expect(recordedText(all.parsed[0]!)).not.toContain(v);
  });

  it('lets decoys and free text through byte for byte, on both guarded routes', async () => {
    for (const path of ['/customers', '/customers-protect']) {
      for (const text of [DECOYS, BLIND]) {
        const { reply, parsed } = await post(path, text);
        expect(reply.status).toBe(200);
        expect(parsed).toHaveLength(1);
        expect(Buffer.from(parsed[0]!.body, 'base64').toString('utf8')).toBe(text);
      }
    }
  });

  it('without the guard (unmapped: pass) the same drifts reach the upstream in clear: the control', async () => {
    let reached = 0;
    for (const d of DRIFTS) {
      const { reply, parsed } = await post('/customers-pass', d.text);
      expect(reply.status).toBe(200);
      if (d.clear.some((c) => recordedText(parsed[0]!).includes(c))) reached++;
    }
    expect(reached).toBe(DRIFTS.length);
  });

  it('0 of the values sent as personal data reached the upstream in clear on a guarded route', async () => {
    const records = (await f.received(firstSeq.value)).filter((r) => !r.target.startsWith('/customers-pass'));
    const values = [
      ...DRIFTS.flatMap((d) => d.clear),
      'drift-v@example.com',
      'drift-w@example.com',
      '3530 1113 3330 0000',
      'drift-z1@example.com',
      'drift-z2@example.com',
      ...Array.from({ length: 20 }, (_, i) => `many-${i}@example.com`),
    ];
    const leaked = values.filter((v) => records.some((r) => recordedText(r).includes(v)));
    console.log(
      `gateway drift: ${records.length} requests forwarded on guarded routes, ${values.length} personal values (in all their forms) searched: ${leaked.length} in clear`,
    );
    expect(leaked).toEqual([]);
  });

  it('counts findings by route, kind and result; logs paths and kinds; neither holds a value', async () => {
    const metrics = await (await fetch(`${f.url}/_veil/metrics`)).text();
    const count = (route: string, kind: string, result: string) => sampleSum(metrics, 'veil_gateway_unmapped_findings_total', { route, kind, result });
    expect(count('customers', 'email', 'refused')).toBeGreaterThanOrEqual(DRIFTS.filter((d) => d.kind === 'email').length);
    expect(count('customers', 'payment-card', 'refused')).toBe(4);
    expect(count('customers', 'iban', 'refused')).toBe(1);
    expect(count('protecting', 'email', 'protected')).toBeGreaterThanOrEqual(7 + 20);
    expect(count('protecting', 'payment-card', 'protected')).toBe(4);
    expect(count('protecting', 'uk-nino', 'refused')).toBe(1);
    expect(count('passing', 'email', 'refused') + count('passing', 'email', 'protected')).toBe(0);
    const output = f.output();
    expect(output).toContain('emailAddress (email)');
    expect(output).toContain('visitsByEmail.* (email)');
    for (const text of [metrics, output]) for (const v of [...DRIFTS.flatMap((d) => d.clear), 'drift-v@example.com']) expect(text).not.toContain(v);
  });
});
