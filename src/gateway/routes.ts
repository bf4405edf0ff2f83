import type { FieldRef } from '../engine/index.ts';
import type { GatewayConfig } from './gateway-config.ts';
import { compileSelectors, type CompiledSelectors } from './json-fields.ts';
import { compilePathPattern, type PathMatcher } from './route-match.ts';
import { parseSelector, type Selector } from './selector.ts';
import { compileGuard, type RequestGuard } from './drift-guard.ts';
import { quietPath } from '../drift-guard/index.ts';
import type { JsonPath } from '../json-bytes/paths.ts';

export interface SelectorSet {
  selectors: readonly Selector[];
  fields: readonly FieldRef[];
  compiled: CompiledSelectors;
  /** keys match case-insensitively */
  foldKeys: boolean;
}

/** A configured route, compiled: matching, and the selectors of each side. */
export interface Route {
  /** for logs: the configured name, else `route-<index>` (never the path: it may hold identifiers) */
  name: string;
  methods: ReadonlySet<string> | 'any';
  matches: PathMatcher;
  request: SelectorSet;
  response: SelectorSet & { ifDenied: readonly (string | undefined)[] };
  /** the unmapped guard on request bodies: on routes with request selectors, unless `unmapped: pass` */
  guard: RequestGuard | undefined;
  /** the caller's Authorization header goes upstream */
  forwardAuthorization: boolean;
  /** a body is accepted on GET, HEAD, DELETE, OPTIONS and TRACE too */
  allowBody: boolean;
  /** `;` parameters in path segments are accepted */
  pathParameters: boolean;
}

export function compileRoutes(config: GatewayConfig): Route[] {
  const caseSensitive = config.paths.case === 'sensitive';
  return config.routes.map((r, i) => {
    const foldKeys = (r.keys ?? config.keys) === 'insensitive';
    const guard = r.request.length > 0 ? compileGuard(r.unmapped ?? config.unmapped, foldKeys) : undefined;
    // the guard's allow-list is quiet to the scan: nothing under an allowed path is shown to the guard
    const request = selectorSet(r.request, foldKeys, guard?.allow.map(quietPath));
    return {
      name: r.name ?? `route-${i}`,
      methods: r.method === '*' || (Array.isArray(r.method) && r.method.includes('*')) ? 'any' : new Set(Array.isArray(r.method) ? r.method : [r.method]),
      matches: compilePathPattern(r.path, { caseSensitive }),
      request,
      response: { ...selectorSet(r.response, foldKeys), ifDenied: r.response.map((s) => s.ifDenied) },
      guard,
      forwardAuthorization: r.forwardAuthorization ?? config.forwardAuthorization,
      allowBody: r.allowBody,
      pathParameters: r.pathParameters,
    };
  });
}

function selectorSet(list: readonly { select: string; field: string }[], foldKeys: boolean, quiet?: readonly JsonPath[]): SelectorSet {
  const selectors = list.map((s) => parseSelector(s.select));
  const fields = list.map((s) => {
    const [className, propertyName] = s.field.split('.') as [string, string];
    return { className, propertyName };
  });
  return { selectors, fields, compiled: compileSelectors(selectors, foldKeys, quiet), foldKeys };
}

/** The first route matching the method and the path's decoded segments, in configuration order. */
export function findRoute(routes: readonly Route[], method: string, segments: readonly string[]): Route | undefined {
  return routes.find((r) => (r.methods === 'any' || r.methods.has(method)) && r.matches(segments));
}

export function hasSelectors(route: Route): boolean {
  return route.request.selectors.length > 0 || route.response.selectors.length > 0;
}
