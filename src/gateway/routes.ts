import type { FieldRef } from '../engine/index.ts';
import type { GatewayConfig } from './gateway-config.ts';
import { compileSelectors, type CompiledSelectors } from './json-fields.ts';
import { compilePathPattern, type PathMatcher } from './route-match.ts';
import { parseSelector, type Selector } from './selector.ts';

export interface SelectorSet {
  selectors: readonly Selector[];
  fields: readonly FieldRef[];
  compiled: CompiledSelectors;
}

/** A configured route, compiled: matching, and the selectors of each side. */
export interface Route {
  /** for logs: the configured name, else `route-<index>` (never the path: it may hold identifiers) */
  name: string;
  methods: ReadonlySet<string> | 'any';
  matches: PathMatcher;
  request: SelectorSet;
  response: SelectorSet & { ifDenied: readonly (string | undefined)[] };
}

export function compileRoutes(config: GatewayConfig): Route[] {
  return config.routes.map((r, i) => ({
    name: r.name ?? `route-${i}`,
    methods: r.method === '*' || (Array.isArray(r.method) && r.method.includes('*')) ? 'any' : new Set(Array.isArray(r.method) ? r.method : [r.method]),
    matches: compilePathPattern(r.path),
    request: selectorSet(r.request),
    response: { ...selectorSet(r.response), ifDenied: r.response.map((s) => s.ifDenied) },
  }));
}

function selectorSet(list: readonly { select: string; field: string }[]): SelectorSet {
  const selectors = list.map((s) => parseSelector(s.select));
  const fields = list.map((s) => {
    const [className, propertyName] = s.field.split('.') as [string, string];
    return { className, propertyName };
  });
  return { selectors, fields, compiled: compileSelectors(selectors) };
}

/** The first route matching method and path, in configuration order. */
export function findRoute(routes: readonly Route[], method: string, path: string): Route | undefined {
  return routes.find((r) => (r.methods === 'any' || r.methods.has(method)) && r.matches(path));
}

export function hasSelectors(route: Route): boolean {
  return route.request.selectors.length > 0 || route.response.selectors.length > 0;
}
