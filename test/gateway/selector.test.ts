import { describe, expect, it } from 'vitest';
import { GatewayFault } from '../../src/gateway/errors.ts';
import { canonicalSelector, parseSelector, pointersOf } from '../../src/gateway/selector.ts';

const steps = (text: string) => parseSelector(text).steps;

describe('selector grammar', () => {
  it('parses dot segments, [*] and quoted keys', () => {
    expect(steps('email')).toEqual([{ kind: 'key', name: 'email' }]);
    expect(steps('customer.email')).toEqual([
      { kind: 'key', name: 'customer' },
      { kind: 'key', name: 'email' },
    ]);
    expect(steps('items[*].card')).toEqual([{ kind: 'key', name: 'items' }, { kind: 'each' }, { kind: 'key', name: 'card' }]);
    expect(steps('customer."e-mail"')).toEqual([
      { kind: 'key', name: 'customer' },
      { kind: 'key', name: 'e-mail' },
    ]);
    expect(steps('[*].email')).toEqual([{ kind: 'each' }, { kind: 'key', name: 'email' }]);
    expect(steps('matrix[*][*]')).toEqual([{ kind: 'key', name: 'matrix' }, { kind: 'each' }, { kind: 'each' }]);
    expect(steps('"a.b"."c d"')).toEqual([
      { kind: 'key', name: 'a.b' },
      { kind: 'key', name: 'c d' },
    ]);
    expect(steps('"say \\"hi\\""."back\\\\slash"')).toEqual([
      { kind: 'key', name: 'say "hi"' },
      { kind: 'key', name: 'back\\slash' },
    ]);
    expect(steps('_id.$ref.0')).toEqual([
      { kind: 'key', name: '_id' },
      { kind: 'key', name: '$ref' },
      { kind: 'key', name: '0' },
    ]);
  });

  it.each([
    ['', 1, /not empty/],
    ['a..b', 3, /expected a key/],
    ['a.', 3, /expected a key after/],
    ['.a', 1, /expected a key/],
    ['a[0]', 2, /only \[\*\]/],
    ['a[?(@.x)]', 2, /only \[\*\]/],
    ['a[*', 2, /only \[\*\]/],
    ['a b', 2, /expected "\." or \[\*\]/],
    ['a-b', 2, /expected "\." or \[\*\]/],
    ['a."b', 3, /unterminated/],
    ['a.""', 3, /not empty/],
    ['a."\\n"', 4, /escapes/],
    ['constructor()', 12, /expected "\." or \[\*\]/],
    ['$..x', 3, /expected a key/],
    ['a.*', 3, /expected a key/],
  ])('refuses %j at column %i', (text, column, reason) => {
    let error: unknown;
    try {
      parseSelector(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(GatewayFault);
    expect((error as GatewayFault).code).toBe('SELECTOR_SYNTAX');
    expect((error as Error).message.startsWith(`column ${column}: `)).toBe(true);
    expect((error as Error).message).toMatch(reason);
  });

  it('bounds the length of a selector', () => {
    expect(() => parseSelector('a'.repeat(1025))).toThrow(GatewayFault);
    expect(parseSelector('a'.repeat(1024)).steps).toHaveLength(1);
  });

  it('has a canonical form that quotes only what needs it', () => {
    expect(canonicalSelector(parseSelector('"customer"."email"'))).toBe('customer.email');
    expect(canonicalSelector(parseSelector('customer."e-mail"'))).toBe('customer."e-mail"');
    expect(canonicalSelector(parseSelector('[*]."a\\"b"[*]'))).toBe('[*]."a\\"b"[*]');
    expect(parseSelector(canonicalSelector(parseSelector('x."a\\"b\\\\"'))).steps).toEqual(steps('x."a\\"b\\\\"'));
  });

  it('points at the scalars a selector reaches, in document order, own properties only', () => {
    const doc = { items: [{ card: '1' }, { card: null }, { other: 2 }, { card: 3 }, { card: { x: 1 } }], 'a/b': { '~': true } };
    expect(pointersOf(doc, parseSelector('items[*].card'))).toEqual(['/items/0/card', '/items/3/card']);
    expect(pointersOf(doc, parseSelector('"a/b"."~"'))).toEqual(['/a~1b/~0']);
    expect(pointersOf(doc, parseSelector('constructor'))).toEqual([]);
    expect(pointersOf(['x', 'y'], parseSelector('[*]'))).toEqual(['/0', '/1']);
  });
});
