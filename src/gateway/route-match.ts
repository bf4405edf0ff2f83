import { foldKey } from '../json-bytes/paths.ts';

/**
 * Route matching of the gateway: a method (or `*`) and a path pattern. Patterns are segments
 * separated by `/`: a literal segment matches itself, `:name` matches any one non-empty segment,
 * and a final `*` matches one or more remaining segments. `/customers`, `/customers/:id/cards`,
 * `/static/*`. Patterns match the request's decoded segments without their `;` parameters
 * (target.ts), case-insensitively unless the configuration says `paths: { case: sensitive }`: so
 * `/Customers`, `/%63ustomers` and `/customers;x` match the route `/customers` — the spellings
 * frameworks route to it — and are protected by it, never forwarded past it.
 */
export interface PathMatcher {
  /** whether the decoded segments match */
  (segments: readonly string[]): boolean;
  /**
   * The path to forward for matched `segments`: each literal segment spelled as the pattern spells
   * it (the upstream reads the path the gateway matched), the others as sent. `raw` is the
   * normalized path's segments with their `;` parameters, which are kept.
   */
  rewrite(raw: readonly string[]): string;
}

const LITERAL = /^[A-Za-z0-9._~!$&'()+,=:@%-]+$/;
const PARAM = /^:[A-Za-z_][A-Za-z0-9_]*$/;

/** Why a pattern is not valid, or undefined. */
export function pathPatternProblem(pattern: string): string | undefined {
  if (!pattern.startsWith('/')) return 'a path pattern starts with /';
  if (pattern === '/') return undefined;
  const segments = pattern.slice(1).split('/');
  for (const [i, s] of segments.entries()) {
    if (s === '*') {
      if (i !== segments.length - 1) return '* may only be the last segment';
      continue;
    }
    if (s === '') return 'a path pattern has no empty segments (// or a trailing /)';
    if (s === '.' || s === '..') return 'a path pattern has no dot segments';
    if (!PARAM.test(s) && !(LITERAL.test(s) && !s.startsWith(':'))) return `segment "${s}" is neither a literal, :name nor *`;
    if (!PARAM.test(s)) {
      let decoded: string;
      try {
        decoded = decodeURIComponent(s);
      } catch {
        return `segment "${s}" holds a malformed percent-encoding`;
      }
      if (/[/\\;\0]/.test(decoded) || decoded === '.' || decoded === '..') return `segment "${s}" decodes to a slash, backslash, semicolon, NUL or dot segment`;
    }
  }
  return undefined;
}

export function compilePathPattern(pattern: string, options: { caseSensitive?: boolean } = {}): PathMatcher {
  const problem = pathPatternProblem(pattern);
  if (problem) throw new Error(problem);
  const norm = options.caseSensitive ? (s: string) => s : foldKey;
  const written = pattern === '/' ? [] : pattern.slice(1).split('/');
  const rest = written.at(-1) === '*';
  const fixed = rest ? written.slice(0, -1) : written;
  const literals = fixed.map((s) => (s.startsWith(':') ? undefined : norm(decodeURIComponent(s))));
  const matches = (parts: readonly string[]): boolean => {
    if (rest ? parts.length <= fixed.length : parts.length !== fixed.length) return false;
    for (let i = 0; i < fixed.length; i++) {
      const literal = literals[i];
      if (literal === undefined ? parts[i] === '' : norm(parts[i]!) !== literal) return false;
    }
    return true;
  };
  return Object.assign(matches, {
    rewrite: (raw: readonly string[]) =>
      `/${raw
        .map((s, i) => {
          if (i >= fixed.length || literals[i] === undefined) return s;
          const semi = s.indexOf(';');
          return semi === -1 ? fixed[i]! : `${fixed[i]!}${s.slice(semi)}`;
        })
        .join('/')}`,
  });
}
