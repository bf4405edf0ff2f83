import { describe, expect, it } from 'vitest';
import { compilePathPattern, pathOf, pathPatternProblem, pathProblem } from '../../src/gateway/route-match.ts';

describe('gateway route matching', () => {
  it('matches exact paths, :params and a trailing *', () => {
    const exact = compilePathPattern('/customers');
    expect(exact('/customers')).toBe(true);
    expect(exact('/customers/1')).toBe(false);
    expect(exact('/Customers')).toBe(false);
    const param = compilePathPattern('/customers/:id/cards');
    expect(param('/customers/42/cards')).toBe(true);
    expect(param('/customers//cards')).toBe(false);
    expect(param('/customers/42')).toBe(false);
    const rest = compilePathPattern('/static/*');
    expect(rest('/static/a')).toBe(true);
    expect(rest('/static/a/b.css')).toBe(true);
    expect(rest('/static')).toBe(false);
    expect(rest('/static/')).toBe(false);
    expect(compilePathPattern('/')('/')).toBe(true);
    expect(compilePathPattern('/')('/x')).toBe(false);
  });

  it.each(['customers', '/a//b', '/a/', '/a/../b', '/*/a', '/a b', '/:1x'])('refuses the pattern %j', (p) => {
    expect(pathPatternProblem(p)).toBeDefined();
  });

  it.each([['/a/../b'], ['/a/./b'], ['/a//b'], ['/a/'], ['/%2e%2e/b'], ['/a%2Fb'], ['/a%5cb'], ['/a\\b'], ['a']])('does not route the path %j', (p) => {
    expect(pathProblem(p)).toBeDefined();
  });

  it('routes ordinary paths, percent-encoded characters included', () => {
    for (const p of ['/', '/customers', '/customers/alice%40example.com', '/a.b/c..d']) expect(pathProblem(p), p).toBeUndefined();
    expect(pathOf('/a/b?x=1&y=/..')).toBe('/a/b');
  });
});
