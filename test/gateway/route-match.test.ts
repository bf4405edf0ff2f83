import { describe, expect, it } from 'vitest';
import { compilePathPattern, pathPatternProblem } from '../../src/gateway/route-match.ts';

const seg = (path: string) => (path === '/' ? [] : path.slice(1).split('/'));

describe('gateway route matching', () => {
  it('matches exact paths, :params and a trailing *, on decoded segments', () => {
    const exact = compilePathPattern('/customers', { caseSensitive: true });
    expect(exact(seg('/customers'))).toBe(true);
    expect(exact(seg('/customers/1'))).toBe(false);
    expect(exact(seg('/Customers'))).toBe(false);
    const param = compilePathPattern('/customers/:id/cards');
    expect(param(seg('/customers/42/cards'))).toBe(true);
    expect(param(seg('/customers//cards'))).toBe(false);
    expect(param(seg('/customers/42'))).toBe(false);
    const rest = compilePathPattern('/static/*');
    expect(rest(seg('/static/a'))).toBe(true);
    expect(rest(seg('/static/a/b.css'))).toBe(true);
    expect(rest(seg('/static'))).toBe(false);
    expect(compilePathPattern('/')([])).toBe(true);
    expect(compilePathPattern('/')(['x'])).toBe(false);
    expect(compilePathPattern('/caf%C3%A9')(['café'])).toBe(true);
  });

  it('matches literals case-insensitively by default, with Unicode simple folding', () => {
    const exact = compilePathPattern('/customers');
    for (const p of ['customers', 'Customers', 'CUSTOMERS', 'cuſtomers', 'cuStomers']) expect(exact([p]), p).toBe(true);
    expect(exact(['customer'])).toBe(false);
  });

  it('rewrites matched literal segments to the pattern spelling, keeping params and ; parameters as sent', () => {
    const m = compilePathPattern('/customers/:id/cards');
    expect(m.rewrite(['CUSTOMERS', 'AbC', 'Cards;v=1'])).toBe('/customers/AbC/cards;v=1');
    expect(compilePathPattern('/static/*').rewrite(['STATIC', 'A', 'b'])).toBe('/static/A/b');
    expect(compilePathPattern('/').rewrite([])).toBe('/');
  });

  it.each(['customers', '/a//b', '/a/', '/a/../b', '/*/a', '/a b', '/:1x', '/a;b', '/a%2Fb', '/%2e%2e', '/a%zz'])('refuses the pattern %j', (p) => {
    expect(pathPatternProblem(p)).toBeDefined();
  });
});
