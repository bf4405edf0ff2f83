import { foldKey } from '../json-bytes/paths.ts';
import { GatewayFault } from './errors.ts';

/**
 * Field selectors of the gateway's routes: where in a JSON body a protected field sits.
 *
 *   selector := step ( '.' key | '[*]' )*      step := key | '[*]'
 *   key      := name | quoted                  name := [A-Za-z0-9_$]+
 *   quoted   := '"' ( any character but '"' and '\', or '\"', '\\' )+ '"'
 *
 * `customer.email`, `items[*].card`, `customer."e-mail"`, `[*].email` (a top-level array),
 * `matrix[*][*]`. No wildcards over keys, no filters, no expressions: a selector is a fixed path
 * with array fan-out, parsed once at configuration load and never evaluated as code.
 */
export type SelectorStep = { readonly kind: 'key'; readonly name: string } | { readonly kind: 'each' };

export interface Selector {
  /** the selector as configured */
  readonly text: string;
  readonly steps: readonly SelectorStep[];
}

/** A selector that does not parse (GatewayFault SELECTOR_SYNTAX): the 1-based column of the first offending character and why. */
function syntaxError(column: number, reason: string): GatewayFault {
  return new GatewayFault('SELECTOR_SYNTAX', `column ${column}: ${reason}`);
}

const NAME_CHAR = /[A-Za-z0-9_$]/;
const MAX_LENGTH = 1024;

export function parseSelector(text: string): Selector {
  if (text.length === 0) throw syntaxError(1, 'a selector is not empty');
  if (text.length > MAX_LENGTH) throw syntaxError(MAX_LENGTH + 1, `a selector has at most ${MAX_LENGTH} characters`);
  const steps: SelectorStep[] = [];
  let p = 0;
  const key = (): void => {
    if (text[p] === '"') {
      const start = p++;
      let name = '';
      for (;;) {
        const c = text[p];
        if (c === undefined) throw syntaxError(start + 1, 'unterminated quoted key');
        if (c === '"') break;
        if (c === '\\') {
          const next = text[p + 1];
          if (next !== '"' && next !== '\\') throw syntaxError(p + 1, 'only \\" and \\\\ are escapes in a quoted key');
          name += next;
          p += 2;
        } else {
          name += c;
          p++;
        }
      }
      if (name === '') throw syntaxError(start + 1, 'a quoted key is not empty');
      p++;
      steps.push({ kind: 'key', name });
      return;
    }
    const start = p;
    while (p < text.length && NAME_CHAR.test(text[p]!)) p++;
    if (p === start) throw syntaxError(p + 1, text[p] === undefined ? 'expected a key after "."' : `expected a key, a quoted key or [*], found "${text[p]}"`);
    steps.push({ kind: 'key', name: text.slice(start, p) });
  };
  const each = (): boolean => {
    if (text[p] !== '[') return false;
    if (text.startsWith('[*]', p)) {
      p += 3;
      steps.push({ kind: 'each' });
      return true;
    }
    throw syntaxError(p + 1, 'only [*] selects array elements (no indexes, filters or expressions)');
  };
  if (!each()) key();
  while (p < text.length) {
    if (text[p] === '.') {
      p++;
      key();
    } else if (!each()) {
      throw syntaxError(p + 1, `expected "." or [*], found "${text[p]}"`);
    }
  }
  return { text, steps };
}

/** The selector in its canonical form (keys quoted only when needed; folded with `foldKeys`), to compare two selectors. */
export function canonicalSelector(selector: Selector, foldKeys = false): string {
  return selector.steps
    .map((s, i) => {
      if (s.kind === 'each') return '[*]';
      const key = foldKeys ? foldKey(s.name) : s.name;
      const name = /^[A-Za-z0-9_$]+$/.test(key) ? key : `"${key.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
      return i === 0 ? name : `.${name}`;
    })
    .join('');
}

/**
 * JSON pointers of the places `selector` reaches in a parsed document, in document order (the
 * order the byte scanner reports them) that hold a string, number or boolean: the values a route
 * transforms. Only used to point at a refused value in an error. Own properties only.
 */
export function pointersOf(doc: unknown, selector: Selector, foldKeys = false): string[] {
  const out: string[] = [];
  const keysOf = (node: object, name: string): string[] => {
    if (!foldKeys) return Object.hasOwn(node, name) ? [name] : [];
    const folded = foldKey(name);
    return Object.keys(node).filter((k) => foldKey(k) === folded);
  };
  const walk = (node: unknown, i: number, at: string): void => {
    if (i === selector.steps.length) {
      if (typeof node === 'string' || typeof node === 'number' || typeof node === 'boolean') out.push(at);
      return;
    }
    const step = selector.steps[i]!;
    if (step.kind === 'each') {
      if (Array.isArray(node)) node.forEach((el, j) => walk(el, i + 1, `${at}/${j}`));
      return;
    }
    if (node !== null && typeof node === 'object' && !Array.isArray(node)) {
      for (const key of keysOf(node, step.name))
        walk((node as Record<string, unknown>)[key], i + 1, `${at}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`);
    }
  };
  walk(doc, 0, '');
  return out;
}
