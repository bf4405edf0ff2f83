import { describe, expect, it } from 'vitest';
import { normalizeTarget } from '../../src/gateway/target.ts';

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
};

describe('gateway request targets', () => {
  it('decodes unreserved characters and upper-cases the other percent-encodings', () => {
    expect(normalizeTarget('/%63ustomers', 'gw')).toMatchObject({ path: '/customers', segments: ['customers'], params: false, query: '' });
    expect(normalizeTarget('/a/alice%40example.com?x=%2F', 'gw')).toMatchObject({
      path: '/a/alice%40example.com',
      segments: ['a', 'alice@example.com'],
      query: '?x=%2F',
    });
    expect(normalizeTarget('/caf%c3%a9', 'gw')).toMatchObject({ path: '/caf%C3%A9', segments: ['café'] });
    expect(normalizeTarget('/', 'gw')).toMatchObject({ path: '/', segments: [] });
  });

  it('matches on segments without ; parameters and says they were there', () => {
    expect(normalizeTarget('/customers;x=1/7', 'gw')).toMatchObject({ path: '/customers;x=1/7', segments: ['customers', '7'], params: true });
  });

  it.each([
    '/a/../b',
    '/a/./b',
    '/a//b',
    '/a/',
    '/%2e%2e/b',
    '/%2E/b',
    '/a%2Fb',
    '/a%2fb',
    '/a%5cb',
    '/a\\b',
    '/a%00b',
    '/a%3Bb',
    '/a%zz',
    '/a%4',
    '/..;/b',
    '/;x/b',
    '/a/%C3',
  ])('does not route the path %j', (p) => {
    expect(code(() => normalizeTarget(p, 'gw'))).toBe('PATH_NOT_CANONICAL');
  });

  it('takes absolute-form only for the Host named, and refuses other target forms', () => {
    expect(normalizeTarget('http://GW:8081/customers?q=1', 'gw:8081')).toMatchObject({ path: '/customers', query: '?q=1' });
    expect(normalizeTarget('http://gw', 'gw')).toMatchObject({ path: '/' });
    for (const t of ['http://evil/customers', 'http://user@gw/customers', '*', 'gw:80', '/a#b', 'ftp://gw/x'])
      expect(
        code(() => normalizeTarget(t, 'gw')),
        t,
      ).toBe('REQUEST_TARGET_INVALID');
    expect(code(() => normalizeTarget('http://gw/x', undefined))).toBe('REQUEST_TARGET_INVALID');
  });
});
