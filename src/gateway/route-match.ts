/**
 * Route matching of the gateway: a method (or `*`) and a path pattern. Patterns are segments
 * separated by `/`: a literal segment matches itself exactly (case-sensitive, no decoding), `:name`
 * matches any one non-empty segment, and a final `*` matches one or more remaining segments.
 * `/customers`, `/customers/:id/cards`, `/static/*`.
 */
export type PathMatcher = (path: string) => boolean;

const LITERAL = /^[A-Za-z0-9._~!$&'()+,;=:@%-]+$/;
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
  }
  return undefined;
}

export function compilePathPattern(pattern: string): PathMatcher {
  const problem = pathPatternProblem(pattern);
  if (problem) throw new Error(problem);
  if (pattern === '/') return (path) => path === '/';
  const segments = pattern.slice(1).split('/');
  const rest = segments.at(-1) === '*';
  const fixed = rest ? segments.slice(0, -1) : segments;
  return (path) => {
    if (!path.startsWith('/')) return false;
    const parts = path.slice(1).split('/');
    if (rest ? parts.length <= fixed.length : parts.length !== fixed.length) return false;
    for (let i = 0; i < fixed.length; i++) {
      const s = fixed[i]!;
      if (s.startsWith(':') ? parts[i] === '' : parts[i] !== s) return false;
    }
    return !rest || parts.slice(fixed.length).join('/') !== '';
  };
}

/**
 * Why a request path is not routed, or undefined: dot segments, empty segments and encoded
 * slashes, dots or backslashes are read differently by different servers, so a path that routes
 * past a protecting route here could reach it upstream. The gateway refuses them rather than guess.
 */
export function pathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'the path does not start with /';
  if (path.includes('\\')) return 'the path holds a backslash';
  if (/%(2e|2f|5c)/i.test(path)) return 'the path holds an encoded dot, slash or backslash';
  if (path !== '/' && path.slice(1).split('/').some((s) => s === '' || s === '.' || s === '..')) return 'the path has an empty or dot segment';
  return undefined;
}

/** The path of a request target (origin form), without its query. */
export function pathOf(target: string): string {
  const q = target.indexOf('?');
  return q === -1 ? target : target.slice(0, q);
}
