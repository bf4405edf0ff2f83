import { describe, expect, it } from 'vitest';
import { compileVeilConfigText } from '../../src/app/config-file.ts';
import { EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';

const withGateway = (gateway: string) => `${EXAMPLE_CONFIG_TEXT}\ngateway:\n${gateway}`;
const errors = (text: string) =>
  compileVeilConfigText(text)
    .issues.filter((i) => i.severity === 'error')
    .map((i) => [i.pointer, i.message, i.line]);

const GOOD = `
  upstream: http://127.0.0.1:3000/app
  routes:
    - method: POST
      path: /customers
      request:
        - { select: 'contacts[*]."e-mail"', field: Customer.email }
      response:
        - { select: card.number, field: Customer.cardNumber, ifDenied: Mask }
    - { method: '*', path: '/static/*' }
`;

describe('the gateway section of the configuration file', () => {
  it('compiles, with defaults, and goes to the gateway layer', () => {
    const { config, issues } = compileVeilConfigText(withGateway(GOOD));
    expect(issues).toEqual([]);
    expect(config!.gateway).toMatchObject({
      upstream: 'http://127.0.0.1:3000/app',
      listen: { host: '127.0.0.1', port: 8081 },
      unmatched: 'refuse',
      forwardAuthorization: false,
      limits: { bodyBytes: 1048576, responseBytes: 4194304, valuesPerBody: 10000, bodyReadTimeoutMs: 30000, upstreamTimeoutMs: 30000 },
      actions: { protect: 'Protect', unprotect: 'Unprotect' },
      healthPath: '/_veil/healthz',
      metricsPath: '/_veil/metrics',
    });
    expect(compileVeilConfigText(EXAMPLE_CONFIG_TEXT).config!.gateway).toBeUndefined();
  });

  it('refuses a metrics path equal to the health path', () => {
    const text = withGateway(`  healthPath: /_ops/x\n  metricsPath: /_ops/x${GOOD}`);
    expect(errors(text).map(([pointer, message]) => [pointer, message])).toEqual([['/gateway/metricsPath', 'metricsPath and healthPath must differ']]);
  });

  it('reports a selector syntax error at its pointer and line', () => {
    const text = withGateway(GOOD.replace(`'contacts[*]."e-mail"'`, `'contacts[0].email'`));
    expect(errors(text)).toEqual([
      [
        '/gateway/routes/0/request/0/select',
        'selector column 9: only [*] selects array elements (no indexes, filters or expressions)',
        text.split('\n').findIndex((l) => l.includes('contacts[0]')) + 1,
      ],
    ]);
  });

  it('reports bad paths, methods and upstreams', () => {
    const text = withGateway(`
  upstream: ftp://example.com
  routes:
    - { method: post, path: 'customers' }
    - { method: GET, path: '/a/../b' }
`);
    expect(errors(text).map(([p]) => p)).toEqual(['/gateway/upstream', '/gateway/routes/0/method', '/gateway/routes/0/path', '/gateway/routes/1/path']);
  });

  it('cross-checks fields, actions and duplicate selectors against the engine sections', () => {
    const text = withGateway(`
  upstream: http://127.0.0.1:3000
  protectAs: { roles: [nobody] }
  routes:
    - method: POST
      path: /x
      request:
        - { select: a, field: Customer.phone }
        - { select: b, field: Customer.email }
        - { select: '"b"', field: Customer.name }
        - { select: B, field: Customer.name }
      response:
        - { select: c, field: Customer.segmentKey }
        - { select: d, field: Customer.email, ifDenied: Mask }
        - { select: e, field: Customer.cardNumber, ifDenied: Pseudonymize }
`);
    expect(errors(text).map(([p, m]) => [p, m])).toEqual([
      ['/gateway/routes/0/request/0/field', 'Customer.phone is not a configured class.property'],
      ['/gateway/routes/0/response/0/field', 'Customer.segmentKey has no sequence for Unprotect'],
      ['/gateway/routes/0/response/1/ifDenied', 'Customer.email has no sequence for Mask'],
      ['/gateway/routes/0/response/2/ifDenied', 'Customer.cardNumber has no sequence for Pseudonymize'],
      ['/gateway/routes/0/request/2/select', "selector b is listed twice in this route's request selectors"],
      [
        '/gateway/routes/0/request/3/select',
        "selector B is listed twice in this route's request selectors (keys match case-insensitively: keys: exact tells them apart)",
      ],
    ]);
    expect(
      compileVeilConfigText(text)
        .issues.filter((i) => i.severity === 'warning')
        .map((i) => i.pointer),
    ).toEqual(['/gateway/protectAs/roles/0']);
  });

  it('refuses actions no processing context selects by Action alone', () => {
    const text = withGateway(`
  upstream: http://127.0.0.1:3000
  actions: { unprotect: Reveal }
  routes: [ { method: GET, path: / } ]
`);
    expect(errors(text).map(([p]) => p)).toEqual(['/gateway/actions/unprotect']);
  });
});
