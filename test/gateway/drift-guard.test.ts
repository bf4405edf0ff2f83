import { describe, expect, it } from 'vitest';
import { compileVeilConfigText } from '../../src/app/config-file.ts';
import { VeilError } from '../../src/engine/index.ts';
import { callerProblem } from '../../src/gateway/caller-problem.ts';
import { gatewaySchema } from '../../src/gateway/gateway-config.ts';
import { locate } from '../../src/gateway/json-fields.ts';
import { compileRoutes, type Route } from '../../src/gateway/routes.ts';
import { BodyGuard, findingPlace, MAX_REPORTED, placeText, unmappedRefusal } from '../../src/gateway/drift-guard.ts';
import { EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';

const withGateway = (gateway: string) => `${EXAMPLE_CONFIG_TEXT}\ngateway:\n${gateway}`;
const issues = (text: string, severity: 'error' | 'warning') =>
  compileVeilConfigText(text)
    .issues.filter((i) => i.severity === severity)
    .map((i) => [i.pointer, i.message]);

const ROUTE = `    - method: POST
      path: /customers
      request:
        - { select: email, field: Customer.email }
        - { select: card.number, field: Customer.cardNumber }
`;

function route(extra: Record<string, unknown> = {}, gateway: Record<string, unknown> = {}): Route {
  return compileRoutes(
    gatewaySchema.parse({
      upstream: 'http://127.0.0.1:1',
      ...gateway,
      routes: [
        {
          method: 'POST',
          path: '/c',
          request: [
            { select: 'email', field: 'Customer.email' },
            { select: 'card.number', field: 'Customer.cardNumber' },
          ],
          ...extra,
        },
      ],
    }),
  )[0]!;
}

/** what the guard finds in `doc` on `r`: path, kind and pointer per finding, as the refusal names them */
function findings(r: Route, doc: unknown, cap = MAX_REPORTED) {
  const body = Buffer.from(typeof doc === 'string' ? doc : JSON.stringify(doc));
  const guard = new BodyGuard(r.guard!, cap);
  const located = locate(body, r.request.compiled, guard);
  return {
    located,
    guard,
    places: guard.found.length === 0 ? [] : unmappedRefusal(guard.found, guard.truncated).findings.map((f) => [f.path, f.kind, f.pointer]),
  };
}

describe('the gateway unmapped guard: threshold', () => {
  it('grades as the stream does: bare card digits in a neutral field are possible, found at threshold possible only; grouped ones anywhere', () => {
    expect(findings(route(), { email: 'a@example.com', extra: '4111111111111111' }).places).toEqual([]);
    expect(findings(route({ unmapped: { threshold: 'possible' } }), { email: 'a@example.com', extra: '4111111111111111' }).places).toEqual([
      ['extra', 'payment-card', '/extra'],
    ]);
    expect(findings(route(), { email: 'a@example.com', extra: '4111 1111 1111 1111' }).places).toEqual([['extra', 'payment-card', '/extra']]);
    expect(findings(route({ unmapped: { threshold: 'very-likely' } }), { email: 'a@example.com', home_tel: '020 7946 0958' }).places).toEqual([]);
    expect(findings(route(), { email: 'a@example.com', home_tel: '020 7946 0958' }).places).toEqual([['home_tel', 'phone', '/home_tel']]);
    expect(gatewaySchema.safeParse({ upstream: 'http://x', unmapped: { threshold: 'unlikely' }, routes: [{ method: 'GET', path: '/' }] }).success).toBe(false);
  });
});

describe('the gateway unmapped guard: configuration', () => {
  it('defaults to refuse at the gateway; a route replaces it as a whole; the object form fills its defaults', () => {
    const { config, issues: found } = compileVeilConfigText(
      withGateway(`  upstream: http://127.0.0.1:3000
  routes:
${ROUTE}${ROUTE.replace('- method: POST', '- method: PUT').replace('path: /customers', 'path: /customers\n      unmapped: { allow: [notes] }')}`),
    );
    expect(found).toEqual([]);
    expect(config!.gateway!.unmapped).toBe('refuse');
    expect(config!.gateway!.routes[0]!.unmapped).toBeUndefined();
    expect(config!.gateway!.routes[1]!.unmapped).toEqual({ action: 'refuse', allow: ['notes'], protect: {}, threshold: 'likely' });
  });

  it("accepts the three actions by their gateway names; dead-letter is the stream's word", () => {
    for (const action of ['refuse', 'protect', 'pass'])
      expect(
        gatewaySchema.safeParse({
          upstream: 'http://x',
          unmapped: action === 'protect' ? { action, protect: { email: 'Customer.email' } } : action,
          routes: [{ method: 'GET', path: '/' }],
        }).success,
      ).toBe(true);
    expect(gatewaySchema.safeParse({ upstream: 'http://x', unmapped: 'dead-letter', routes: [{ method: 'GET', path: '/' }] }).success).toBe(false);
    expect(
      gatewaySchema.safeParse({
        upstream: 'http://x',
        unmapped: { action: 'protect', protect: { 'ip-address': 'Customer.email' } },
        routes: [{ method: 'GET', path: '/' }],
      }).success,
    ).toBe(false);
    expect(gatewaySchema.safeParse({ upstream: 'http://x', unmapped: { action: 'refuse', oops: 1 }, routes: [{ method: 'GET', path: '/' }] }).success).toBe(
      false,
    );
  });

  it("checks protected fields like selectors' fields, and refuses action protect without kinds", () => {
    const text = withGateway(`  upstream: http://127.0.0.1:3000
  unmapped: { action: protect, protect: { email: Customer.phone } }
  routes:
${ROUTE}      unmapped: { action: protect }
${ROUTE.replace('- method: POST', '- method: PUT')}      unmapped: { action: protect, protect: { payment-card: Customer.segmentKey, iban: Nothing.here } }
`);
    expect(issues(text, 'error')).toEqual([
      ['/gateway/routes/0/unmapped/protect', 'action protect names no kind to protect: map a kind to a Class.property, e.g. email: Customer.email'],
      ['/gateway/routes/1/unmapped/protect/iban', 'Nothing.here is not a configured class.property'],
      ['/gateway/unmapped/protect/email', 'Customer.phone is not a configured class.property'],
    ]);
    // segmentKey has a protect sequence: fine, as for a selector
    expect(issues(text, 'error').some(([p]) => p!.includes('payment-card'))).toBe(false);
  });

  it('reports allow selectors that do not parse, and warns where the guard would not run or kinds would not be protected', () => {
    const bad = withGateway(`  upstream: http://127.0.0.1:3000
  routes:
${ROUTE}      unmapped: { allow: ['items[0].sku'] }
`);
    expect(issues(bad, 'error')).toEqual([
      ['/gateway/routes/0/unmapped/allow/0', 'selector column 6: only [*] selects array elements (no indexes, filters or expressions)'],
    ]);
    const text = withGateway(`  upstream: http://127.0.0.1:3000
  routes:
${ROUTE}      unmapped: { allow: ['items[*].sku'] }
    - { method: GET, path: /static, unmapped: pass }
${ROUTE.replace('- method: POST', '- method: PUT')}      unmapped: { action: refuse, protect: { email: Customer.email } }
`);
    expect(issues(text, 'error')).toEqual([]);
    expect(issues(text, 'warning')).toEqual([
      ['/gateway/routes/1/unmapped', 'the unmapped guard runs on routes with request selectors only: this route pipes its request body untouched'],
      ['/gateway/routes/2/unmapped/protect', 'kinds are protected only with action protect: with action refuse they are refused'],
    ]);
  });

  it('compiles a guard only for routes with request selectors and an action other than pass', () => {
    expect(route().guard?.action).toBe('refuse');
    expect(route({ unmapped: 'pass' }).guard).toBeUndefined();
    expect(route({}, { unmapped: 'pass' }).guard).toBeUndefined();
    expect(route({ unmapped: 'refuse' }, { unmapped: 'pass' }).guard?.action).toBe('refuse');
    expect(route({ request: [], response: [{ select: 'email', field: 'Customer.email' }] }).guard).toBeUndefined();
    const p = route({ unmapped: { action: 'protect', protect: { email: 'Customer.email', iban: 'Customer.nationalId' } } }).guard!;
    expect([p.action, [...p.protect]]).toEqual([
      'protect',
      [
        ['email', { className: 'Customer', propertyName: 'email' }],
        ['iban', { className: 'Customer', propertyName: 'nationalId' }],
      ],
    ]);
    // refuse ignores kinds to protect
    expect(route({ unmapped: { action: 'refuse', protect: { email: 'Customer.email' } } }).guard!.protect.size).toBe(0);
  });
});

describe('the gateway unmapped guard: what it finds', () => {
  it('names each drift by selector-syntax path, kind and JSON pointer; selected values are not its business', () => {
    const doc = {
      email: 'alice@example.com',
      card: { number: '4111-1111-1111-1111', nubmer: '5500 0000 0000 0004' },
      emailAddress: 'a@example.com',
      contact: { email: 'c@example.com' },
      iban: 'GB82 WEST 1234 5698 7654 32',
      profile: { contacts: [{ kind: 'home' }, { 'e-mail': 'd@example.com' }] },
      cardNumber: 4111111111111111,
      note: 'call me maybe',
      mobilePhone: '+44 20 7946 0958',
      fullName: 'Alice Martin',
    };
    const { located, places } = findings(route(), doc);
    expect(located.values.map((v) => v.value)).toEqual(['alice@example.com', '4111-1111-1111-1111']);
    expect(places).toEqual([
      ['card.nubmer', 'payment-card', '/card/nubmer'],
      ['emailAddress', 'email', '/emailAddress'],
      ['contact.email', 'email', '/contact/email'],
      ['iban', 'iban', '/iban'],
      ['profile.contacts[*]."e-mail"', 'email', '/profile/contacts/1/e-mail'],
      ['cardNumber', 'payment-card', '/cardNumber'],
      ['mobilePhone', 'phone', '/mobilePhone'],
      ['fullName', 'person-name', '/fullName'],
    ]);
  });

  it('reports personal data as an object key at its object, the key shown as *; a pointer stops above a key that may be data', () => {
    const { places, guard } = findings(route(), { byEmail: { 'bob@example.com': { email2: 'x@example.com' } }, list: [[{ '4111 1111 1111 1111': 1 }]] });
    expect(places).toEqual([
      ['byEmail.*', 'email', '/byEmail'],
      ['byEmail.*.email2', 'email', '/byEmail'],
      ['list[*][*].*', 'payment-card', '/list/0/0'],
    ]);
    expect(guard.found.map((f) => f.key)).toEqual([true, false, true]);
  });

  it("folds keys: `Email` is the selector's (protected, not a finding); with keys: exact it is a finding", () => {
    expect(findings(route(), { Email: 'a@example.com', CARD: { NUMBER: '4111111111111111' } }).places).toEqual([]);
    expect(findings(route({ keys: 'exact' }), { Email: 'a@example.com' }).places).toEqual([['Email', 'email', '/Email']]);
  });

  it("allow covers a path and everything under it, matched with the route's key rule", () => {
    const doc = { notes: { by: 'a@example.com' }, Legacy: [{ contact: 'b@example.com', other: 'c@example.com' }], keep: 'd@example.com' };
    const allow = { unmapped: { allow: ['notes', 'legacy[*].contact'] } };
    expect(findings(route(allow), doc).places.map(([p]) => p)).toEqual(['Legacy[*].other', 'keep']);
    expect(findings(route({ ...allow, keys: 'exact' }), doc).places.map(([p]) => p)).toEqual(['Legacy[*].contact', 'Legacy[*].other', 'keep']);
    expect(findings(route({ unmapped: { allow: ['"by-email"'] } }), { 'by-email': { 'e@example.com': 'f@example.com' } }).places).toEqual([]);
  });

  it('sees escaped strings as the application reads them: \\u-escaped values and keys', () => {
    const text =
      '{"em\\u0061il":"plain","contact":{"em\\u0061il":"bob\\u0040example.com"},"n":"4111\\u002d1111\\u002d1111\\u002d1111","m":{"x\\u0040example.com":1}}';
    const r = route();
    const { places, located, guard } = findings(r, text);
    expect(located.values.map((v) => v.value)).toEqual(['plain']);
    expect(places).toEqual([
      ['contact.email', 'email', '/contact/email'],
      ['n', 'payment-card', '/n'],
      ['m.*', 'email', '/m'],
    ]);
    // spans are the body's own: the splice replaces the escaped value in place
    const body = Buffer.from(text);
    expect(guard.found.map((f) => body.toString('utf8', f.start, f.end))).toEqual([
      '"bob\\u0040example.com"',
      '"4111\\u002d1111\\u002d1111\\u002d1111"',
      '"x\\u0040example.com"',
    ]);
  });

  it('lets decoys and free text through', () => {
    const doc = {
      id: '3f2b8c1e-9a4d-4e2b-8f6a-1c2d3e4f5a6b',
      order: 'ORD-2024-000123',
      ref: '4111111111111112',
      refNumber: 4111111111111112,
      sku: 'SKU-88213-XL',
      version: '2024.11.27-rc.1',
      postcode: 'SW1A 1AA',
      zip: '90210-1234',
      at: '2024-11-27T03:28:34.123Z',
      ts: 1732678114123,
      amount: 129.9,
      text: 'Please call Alice Martin tomorrow about her order',
      name: 'Widget',
      items: [{ sku: 'A-1', qty: 2 }],
    };
    expect(findings(route(), doc).places).toEqual([]);
  });

  it('keeps every finding up to its cap (the detectors alone stop at 16), and says when it stopped', () => {
    const doc = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`e${i}`, `u${i}@example.com`]));
    const all = findings(route(), doc, 41);
    expect([all.guard.found.length, all.guard.truncated]).toEqual([40, false]);
    const capped = findings(route(), doc, MAX_REPORTED);
    expect([capped.guard.found.length, capped.guard.truncated]).toEqual([MAX_REPORTED, true]);
    const refusal = unmappedRefusal(capped.guard.found, capped.guard.truncated);
    expect(refusal.message).toBe(
      '16 or more unmapped paths hold personal data; the first: unmapped path e0 holds personal data (email). Nothing was forwarded',
    );
  });
});

describe('the gateway unmapped guard: the refusal', () => {
  it('is 422 UNMAPPED_PERSONAL_DATA with a detail per finding at its pointer, never the value', () => {
    const body = Buffer.from(JSON.stringify({ contact: { email: 'secret@example.com' }, cards: [1, { n: 4111111111111111 }] }));
    const guard = new BodyGuard(route().guard!, MAX_REPORTED);
    locate(body, route().request.compiled, guard);
    const e = unmappedRefusal(guard.found, false);
    expect([e.code, e.status]).toEqual(['UNMAPPED_PERSONAL_DATA', 422]);
    expect(e.details).toEqual([
      { code: 'UNMAPPED_PERSONAL_DATA', pointer: '/contact/email', message: 'unmapped path contact.email holds personal data (email)' },
      { code: 'UNMAPPED_PERSONAL_DATA', pointer: '/cards/1/n', message: 'unmapped path cards[*].n holds personal data (payment-card)' },
    ]);
    expect(e.findings).toEqual([
      { path: 'contact.email', kind: 'email', pointer: '/contact/email', key: false },
      { path: 'cards[*].n', kind: 'payment-card', pointer: '/cards/1/n', key: false },
    ]);
    expect(JSON.stringify([e.message, e.details, e.findings])).not.toMatch(/secret|4111/);
    const one = unmappedRefusal(guard.found.slice(0, 1), false);
    expect(one.message).toBe("unmapped path contact.email holds personal data (email), which the route's request selectors do not name: nothing was forwarded");
  });

  it("places values and keys by the scan's own trail (no second walk), escapes pointer segments, names the body itself", () => {
    const text =
      '{"a/b~c": [ {"pan": 4111111111111111}, {"y" : "v@example.com", "z":[true, null, "w@example.com"]} ], "k": {"q@example.com":2}, "m-n": [{"p": "+44 20 7946 0958"}]}';
    const guard = new BodyGuard(route().guard!, MAX_REPORTED);
    locate(Buffer.from(text), route().request.compiled, guard);
    expect(guard.found.map((f) => f.trail)).toEqual([
      ['a/b~c', 0, 'pan'],
      ['a/b~c', 1, 'y'],
      ['a/b~c', 1, 'z', 2],
      ['k', 'q@example.com'],
      ['m-n', 0, 'p'],
    ]);
    expect(guard.found.map((f) => findingPlace(f).pointer)).toEqual(['', '', '', '/k', '/m-n/0/p']);
    expect(placeText(['a/b~c', 1, 'z', 2], false)).toEqual({ path: '*[*].z[*]', pointer: '' });
    expect(placeText(['a-b', 1, 'z'], false)).toEqual({ path: '"a-b"[*].z', pointer: '/a-b/1/z' });
    expect(placeText([], false)).toEqual({ path: '', pointer: '' });
    expect(placeText([], true)).toEqual({ path: '*', pointer: '' });
    expect(unmappedRefusal([{ path: '', kind: 'email', start: 0, end: 15, key: false, trail: [] }], false).message).toContain(
      'the body itself holds personal data (email)',
    );
  });

  it("an engine refusal of a protected finding points at the finding in the caller's body", () => {
    const r = route({ unmapped: { action: 'protect', protect: { 'payment-card': 'Customer.cardNumber' } } });
    const body = Buffer.from('{"email":"a@example.com","wallet":[{"pan":"4000 0566 5566 5556"}]}');
    const guard = new BodyGuard(r.guard!, 100);
    const located = locate(body, r.request.compiled, guard);
    const engine = new VeilError('ACTION_NOT_GRANTED', 'x', [
      { code: 'ACTION_NOT_GRANTED', pointer: '/requests/0/instances/1', instance: 1, className: 'Customer', propertyName: 'cardNumber', message: 'x' },
    ]);
    const out = callerProblem(engine, {
      route: r,
      body,
      located,
      action: 'Protect',
      rolesFrom: 'token',
      guardPointer: (i) => findingPlace(guard.found[i]!).pointer,
    });
    expect(out.details[0]).toMatchObject({
      pointer: '/wallet/0/pan',
      message: "Protect on Customer.cardNumber (at /wallet/0/pan) is not granted to the roles in the caller's token",
    });
  });
});
