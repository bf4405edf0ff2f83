// The gateway section of a test's configuration, as YAML: its routes built from the selectors the
// tests share, so a route reads as what it protects (`customers(EMAIL, CARD)`) and the YAML's
// indentation is written once.

/** request or response selectors of the example configuration's Customer fields */
export const EMAIL = '{ select: email, field: Customer.email }';
export const CARD = '{ select: card.number, field: Customer.cardNumber }';
export const NAME = '{ select: name, field: Customer.name }';

export interface RouteOptions {
  request?: readonly string[];
  response?: readonly string[];
  /** other settings of the route, as written (`keys: exact`, `pathParameters: true`, `forwardAuthorization: true`) */
  settings?: readonly string[];
}

/** One route: with selectors as a block; without, on one line. `method` as YAML (`POST`, `[GET, POST]`, `'*'`). */
export function route(name: string, method: string, path: string, options: RouteOptions = {}): string {
  const settings = options.settings ?? [];
  if (!options.request && !options.response) return `    - { name: ${name}, method: ${method}, path: '${path}'${settings.map((s) => `, ${s}`).join('')} }\n`;
  const list = (key: string, selectors: readonly string[] | undefined) =>
    selectors ? `      ${key}:\n${selectors.map((s) => `        - ${s}\n`).join('')}` : '';
  return `    - name: ${name}\n      method: ${method}\n      path: ${path}\n${settings.map((s) => `      ${s}\n`).join('')}${list('request', options.request)}${list('response', options.response)}`;
}

/** POST /customers protecting the request selectors given */
export const customers = (...request: string[]): string => route('customers', 'POST', '/customers', { request });
/** GET /static/*, no selectors */
export const STATIC = route('static', 'GET', '/static/*');
/** GET and POST /sec/*, no selectors */
export const SEC = route('sec', '[GET, POST]', '/sec/*');

/** The section's settings before its routes (`unmatched: forward`, `limits: { … }`), then the routes. */
export function gatewaySection(routes: readonly string[], ...settings: string[]): string {
  return `${settings.map((s) => `  ${s}\n`).join('')}  routes:\n${routes.join('')}`;
}
