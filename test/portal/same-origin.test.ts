import { describe, expect, it } from 'vitest';
import { crossOriginReason } from '../../src/portal/same-origin.ts';

const facts = (headers: Record<string, string | string[]>, host = '127.0.0.1:8080', protocol = 'http') => ({ headers, host, protocol });

describe('crossOriginReason: whether a portal POST came from another origin (issue 43)', () => {
  it.each([
    ['no header at all', facts({})],
    ['the own origin', facts({ origin: 'http://127.0.0.1:8080' })],
    ['scheme and host in another case', facts({ origin: 'HTTP://Veil.Example.org' }, 'veil.example.org')],
    ['a Host naming the default port', facts({ origin: 'https://veil.example.org' }, 'veil.example.org:443', 'https')],
    ['IPv6', facts({ origin: 'http://[::1]:8080' }, '[::1]:8080')],
    ['behind a trusted proxy: the public name and https', facts({ origin: 'https://veil.example.org' }, 'veil.example.org', 'https')],
    ['Sec-Fetch-Site same-origin', facts({ 'sec-fetch-site': 'same-origin' })],
    ['Sec-Fetch-Site none', facts({ 'sec-fetch-site': 'none', origin: 'http://127.0.0.1:8080' })],
  ])('accepts %s', (_label, req) => {
    expect(crossOriginReason(req)).toBeUndefined();
  });

  it.each([
    ['another site', facts({ origin: 'http://evil.example' }), 'Origin names another origin'],
    ['null', facts({ origin: 'null' }), 'Origin is not a serialized origin'],
    ['an explicit default port', facts({ origin: 'https://veil.example.org:443' }, 'veil.example.org', 'https'), 'Origin is not a serialized origin'],
    ['a query', facts({ origin: 'http://127.0.0.1:8080?x' }), 'Origin is not a serialized origin'],
    ['a scheme other than http(s)', facts({ origin: 'file://' }), 'Origin is not a serialized origin'],
    ['the right host with the wrong scheme', facts({ origin: 'http://veil.example.org' }, 'veil.example.org', 'https'), 'Origin names another origin'],
    ['a Host that is no host', facts({ origin: 'http://127.0.0.1:8080' }, ''), 'Origin names another origin'],
    ['Sec-Fetch-Site same-site', facts({ 'sec-fetch-site': 'same-site', origin: 'http://127.0.0.1:8080' }), 'Sec-Fetch-Site names another origin'],
    ['Sec-Fetch-Site repeated', facts({ 'sec-fetch-site': ['same-origin', 'same-origin'] }), 'Sec-Fetch-Site names another origin'],
    ['an unknown Sec-Fetch-Site', facts({ 'sec-fetch-site': 'same-origin, cross-site' }), 'Sec-Fetch-Site names another origin'],
  ])('refuses %s, saying why without quoting the header', (_label, req, reason) => {
    expect(crossOriginReason(req)).toBe(reason);
  });
});
