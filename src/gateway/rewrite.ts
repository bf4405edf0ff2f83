import type { IncomingMessage } from 'node:http';
import type { GuardedCaller } from '../audit/index.ts';
import type { UnmappedFinding } from '../drift-guard/index.ts';
import { VeilError, type FieldRef } from '../engine/index.ts';
import { EV_RAW, EV_STRING, leafText } from '../json-bytes/scan.ts';
import type { Caller } from '../identity/index.ts';
import { decodeBody, encodeBody, readBody } from './body-io.ts';
import { callerBody, pipeResponse, upstreamHeaders, type Exchange } from './exchange.ts';
import { framingHeaders, hasBody } from './framing.ts';
import { codingOf, decodableAcceptEncoding, endToEnd, headerValue, isJsonMediaType, weakenEtag, type Coding } from './headers.ts';
import { callerProblem } from './caller-problem.ts';
import { locate, spliceStrings, type Located } from './json-fields.ts';
import type { Route } from './routes.ts';
import { bodyGuard, findingPlace, MAX_REPORTED, unmappedRefusal, type BodyGuard } from './drift-guard.ts';
import type { UpstreamRequest } from './upstream.ts';
import { ATTR } from '../observability/index.ts';
import { DoorError } from '../errors/door-errors.ts';
import { GatewayError, GatewayFault } from './errors.ts';

/** Headers whose value no longer describes a body the gateway rewrote. */
const BODY_DIGESTS = ['content-md5', 'digest', 'content-digest', 'repr-digest'];

/**
 * The upstream request of a route with selectors. With request selectors and a body: the body is
 * read whole (limit, deadline), decoded, checked to be JSON, its selected values protected with
 * the protecting identity and spliced in, re-encoded, and only then sent — a body that cannot be
 * protected is refused and nothing reaches the upstream. In the same scan the unmapped guard
 * checks every value and key no selector reaches: personal data there is refused, or protected
 * with the selected values in one call (drift-guard.ts). Without request selectors the body is piped.
 */
export async function protectRequest(x: Exchange, route: Route, caller: Caller): Promise<UpstreamRequest> {
  const { req, config } = x;
  const drop = new Set<string>();
  const extra: string[] = [];
  if (route.response.selectors.length > 0) {
    // the response must come whole and in a coding the gateway can rewrite
    drop.add('accept-encoding').add('range').add('if-range');
    const accept = decodableAcceptEncoding(headerValue(req.rawHeaders, 'accept-encoding'));
    if (accept !== undefined) extra.push('Accept-Encoding', accept);
  }
  const base = { method: req.method ?? 'GET', target: x.target };
  if (route.request.selectors.length === 0 || !hasBody(x.framing)) {
    return { ...base, headers: [...upstreamHeaders(x, drop), ...extra, ...framingHeaders(x.framing)], body: hasBody(x.framing) ? callerBody(x) : undefined };
  }

  const { raw, body, coding } = await jsonRequestBody(x);
  const limits = config.limits;
  // the unmapped guard keeps every finding it protects (up to the values limit), or the first few it refuses
  const guard = route.guard === undefined ? undefined : bodyGuard(route.guard, route.guard.action === 'protect' ? limits.valuesPerBody + 1 : MAX_REPORTED);
  const located = locate(body, route.request.compiled, guard);
  if (located.mismatched.length) {
    throw new GatewayError(
      'FIELD_SHAPE_MISMATCH',
      `${located.mismatched.length === 1 ? 'a selected field has' : 'selected fields have'} an object or array where a value is selected, or a value where an object or array is`,
      {
        details: located.mismatched.map((m) => ({
          code: 'FIELD_SHAPE_MISMATCH',
          pointer: '',
          message: `selector ${route.request.selectors[m]!.text} (${fieldName(route, 'request', m)}) does not fit the body's shape`,
          ...fieldOf(route, 'request', m),
        })),
      },
    );
  }
  const guarded = guard === undefined || guard.found.length === 0 ? [] : guardedValues(x, route, body, guard);
  if (located.values.length + guarded.length > limits.valuesPerBody)
    throw new DoorError(
      'LIMIT_EXCEEDED',
      `the body holds more than ${limits.valuesPerBody} values to protect (selected, and personal data the unmapped guard protects)`,
    );

  const outputs = await protectValues(x, route, caller, { body, located, guarded });
  countFields(
    x,
    route,
    'request',
    located.values.map((v) => ({ selector: v.selector, result: 'protected' })),
  );
  countUnmapped(
    x,
    route,
    guarded.map((g) => g.finding),
    'protected',
  );
  const n = located.values.length;
  const rewritten = spliceStrings(body, [
    ...located.values.map((v, i) => ({ start: v.start, end: v.end, text: outputs[i]! })),
    ...guarded.map((g, i) => ({ start: g.finding.start, end: g.finding.end, text: outputs[n + i]! })),
  ]);
  const encoded = rewritten === body ? raw : await encodeBody(rewritten, coding);
  BODY_DIGESTS.forEach((h) => drop.add(h));
  return { ...base, headers: [...upstreamHeaders(x, drop), ...extra, 'Content-Length', String(encoded.length)], body: encoded };
}

/**
 * The caller's body, read whole (limit, deadline) and decoded: `raw` as it arrived (sent on as is
 * when no value changes), `body` decoded, `coding` to encode the rewritten body in. A body that is
 * not JSON by its Content-Type, in an unknown coding, too large or late is refused before any of
 * it reaches the upstream.
 */
async function jsonRequestBody(x: Exchange): Promise<{ raw: Buffer; body: Buffer; coding: Coding }> {
  const { req, config } = x;
  if (!isJsonMediaType(req.headers['content-type']))
    throw new DoorError('CONTENT_TYPE_UNSUPPORTED', 'this route protects fields of a JSON body: the body must be application/json');
  const coding = codingOf(req.rawHeaders);
  if (coding === undefined) throw new GatewayError('CONTENT_ENCODING_UNSUPPORTED', 'the body must be sent as gzip, br, deflate or identity');
  const limit = config.limits.bodyBytes;
  if (x.framing.kind === 'length' && x.framing.length > limit) throw tooLarge(limit);
  let raw: Buffer;
  try {
    raw = await readBody(callerBody(x), limit, config.limits.bodyReadTimeoutMs);
  } catch (e) {
    if (!(e instanceof GatewayFault)) throw e;
    if (e.code === 'BODY_OVER_LIMIT') throw tooLarge(limit);
    if (e.code === 'BODY_READ_TIMEOUT') throw new DoorError('REQUEST_TIMEOUT', `the body did not arrive within ${config.limits.bodyReadTimeoutMs} ms`);
    throw new DoorError('REQUEST_TIMEOUT', 'the body did not arrive in whole (the connection closed)');
  }
  try {
    return { raw, body: await decodeBody(raw, coding, limit), coding };
  } catch (e) {
    if (!(e instanceof GatewayFault)) throw e;
    throw e.code === 'BODY_OVER_LIMIT' ? tooLarge(limit) : new GatewayError('BODY_NOT_JSON', `the body cannot be decoded as ${coding}`);
  }
}

/**
 * The selected values, then the guarded ones, protected in one call (authorized and audited once)
 * as the protecting identity (protectAs, else the caller); an engine's refusal is the caller's
 * problem, pointing at the value's place in the body.
 */
async function protectValues(
  x: Exchange,
  route: Route,
  caller: Caller,
  found: { body: Buffer; located: Located; guarded: readonly GuardedValue[] },
): Promise<string[]> {
  const { config } = x;
  const { body, located, guarded } = found;
  const protectAs: GuardedCaller = config.protectAs ? { ...caller, roles: config.protectAs.roles } : caller;
  const values = [
    ...located.values.map((v) => ({ field: route.request.fields[v.selector]!, value: v.value })),
    ...guarded.map((g) => ({ field: g.field, value: g.value })),
  ];
  try {
    return await x.transformer.protect(x.id, protectAs, values);
  } catch (e) {
    if (e instanceof VeilError) {
      const guardPointer = (i: number) => findingPlace(guarded[i]!.finding).pointer;
      throw callerProblem(e, { route, body, located, action: config.actions.protect, rolesFrom: config.protectAs ? 'protectAs' : 'token', guardPointer });
    }
    throw e;
  }
}

/**
 * The response of a route with response selectors. A JSON body is read whole, decoded, its selected
 * values revealed as far as the caller may see them, re-encoded in the upstream's coding with a
 * correct Content-Length. Bodies that are not JSON by their Content-Type, and bodiless responses,
 * pass through untouched: they hold no selected field.
 */
export async function revealResponse(x: Exchange, route: Route, caller: Caller, response: IncomingMessage): Promise<void> {
  const status = response.statusCode ?? 502;
  if (x.req.method === 'HEAD' || status === 204 || status === 304 || status < 200 || !isJsonMediaType(response.headers['content-type'])) {
    pipeResponse(x, response);
    return;
  }
  const invalid = (why: string) => {
    response.destroy();
    return new GatewayError('UPSTREAM_RESPONSE_INVALID', `the upstream response ${why}`);
  };
  const coding = codingOf(response.rawHeaders);
  if (coding === undefined) throw invalid('has a Content-Encoding the gateway cannot decode');
  const limit = x.config.limits.responseBytes;
  if (Number(response.headers['content-length'] ?? 0) > limit) throw invalid(`is larger than ${limit} bytes`);
  let raw: Buffer;
  try {
    raw = await readBody(response, limit, x.config.limits.upstreamTimeoutMs);
  } catch (e) {
    if (!(e instanceof GatewayFault)) throw e;
    throw e.code === 'BODY_OVER_LIMIT'
      ? invalid(`is larger than ${limit} bytes`)
      : new GatewayError('UPSTREAM_TIMEOUT', 'the upstream response body did not arrive in whole');
  }
  let body: Buffer;
  try {
    body = await decodeBody(raw, coding, limit);
  } catch (e) {
    if (!(e instanceof GatewayFault)) throw e;
    throw invalid(e.code === 'BODY_OVER_LIMIT' ? `is larger than ${limit} bytes once decoded` : `cannot be decoded as ${coding}`);
  }
  let edits: { start: number; end: number; text: string }[] = [];
  if (body.length > 0) {
    let located: Located;
    try {
      located = locate(body, route.response.compiled);
    } catch {
      throw invalid('is not JSON although its Content-Type says so');
    }
    if (located.values.length > x.config.limits.valuesPerBody) throw invalid(`holds more than ${x.config.limits.valuesPerBody} selected values`);
    const shown = await x.transformer.reveal(
      x.id,
      caller,
      located.values.map((v) => ({
        field: route.response.fields[v.selector]!,
        value: v.value,
        ...(route.response.ifDenied[v.selector] ? { ifDenied: route.response.ifDenied[v.selector]! } : {}),
      })),
    );
    const unprotect = x.config.actions.unprotect;
    countFields(
      x,
      route,
      'response',
      located.values.map((v, i) => ({
        selector: v.selector,
        result: shown[i] === undefined ? 'kept' : shown[i].action === unprotect ? 'revealed' : shown[i].action,
      })),
    );
    edits = located.values.flatMap((v, i) => (shown[i] === undefined ? [] : [{ start: v.start, end: v.end, text: shown[i].text }]));
  }
  const drop = new Set(['content-length']);
  const extra: string[] = [];
  let out = raw;
  if (edits.length > 0) {
    out = await encodeBody(spliceStrings(body, edits), coding);
    BODY_DIGESTS.forEach((h) => drop.add(h));
    drop.add('etag');
    const etag = headerValue(response.rawHeaders, 'etag');
    if (etag !== undefined) extra.push('ETag', weakenEtag(etag));
  }
  x.res.writeHead(status, response.statusMessage, [...endToEnd(response.rawHeaders, drop), ...extra, 'Content-Length', String(out.length)]);
  x.res.end(out);
}

/** A finding of the unmapped guard that the route protects: the field of its kind and the value's text. */
interface GuardedValue {
  finding: UnmappedFinding;
  field: FieldRef;
  value: string;
}

/**
 * The guard's findings in a body: each protected as the field of its kind when the route protects
 * that kind (action protect), else the request is refused — UNMAPPED_PERSONAL_DATA naming the paths
 * and kinds, never the values — and nothing is forwarded. An object key is always refused: it
 * cannot be protected in place (nor would the application find it under a protected name).
 */
function guardedValues(x: Exchange, route: Route, body: Buffer, guard: BodyGuard): GuardedValue[] {
  const protect = route.guard!.protect;
  const refused = guard.found.filter((f) => f.key || !protect.has(f.kind));
  if (refused.length > 0) {
    countUnmapped(x, route, guard.found, 'refused');
    throw unmappedRefusal(refused, guard.truncated);
  }
  if (guard.truncated) {
    countUnmapped(x, route, guard.found, 'refused');
    throw new DoorError('LIMIT_EXCEEDED', `the body holds more than ${x.config.limits.valuesPerBody} values of personal data the unmapped guard protects`);
  }
  return guard.found.map((f) => ({
    finding: f,
    field: protect.get(f.kind)!,
    value: leafText(body, body[f.start] === 0x22 ? EV_STRING : EV_RAW, f.start, f.end),
  }));
}

/** Adds the guard's findings to veil_gateway_unmapped_findings_total, by route, kind and result. */
function countUnmapped(x: Exchange, route: Route, findings: readonly UnmappedFinding[], result: 'refused' | 'protected'): void {
  x.span?.setAttribute(ATTR.unmappedFindings, findings.length);
  const counts = new Map<string, number>();
  for (const f of findings) counts.set(f.kind, (counts.get(f.kind) ?? 0) + 1);
  for (const [kind, n] of counts) x.metrics.unmapped.inc({ route: route.name, kind, result }, n);
}

/** Adds each value's result to veil_gateway_fields_total, by route and configured field. */
function countFields(x: Exchange, route: Route, side: 'request' | 'response', results: readonly { selector: number; result: string }[]): void {
  x.span?.setAttribute(side === 'request' ? ATTR.requestValues : ATTR.responseValues, results.length);
  // (field, result) pairs in three parallel lists, found by a scan: no key string built and split
  // per value and no Map per body (this runs on every body; a route has few fields and results)
  const fields: string[] = [];
  const outcomes: string[] = [];
  const counts: number[] = [];
  for (const r of results) {
    const field = fieldName(route, side, r.selector);
    let i = 0;
    while (i < fields.length && (fields[i] !== field || outcomes[i] !== r.result)) i++;
    if (i === fields.length) {
      fields.push(field);
      outcomes.push(r.result);
      counts.push(0);
    }
    counts[i]!++;
  }
  for (let i = 0; i < fields.length; i++) x.metrics.fields.inc({ route: route.name, field: fields[i]!, result: outcomes[i]! }, counts[i]!);
}

function tooLarge(limit: number): VeilError {
  return new DoorError('BODY_TOO_LARGE', `the body exceeds ${limit} bytes (on the wire or decoded)`);
}

function fieldOf(route: Route, side: 'request' | 'response', m: number): { className: string; propertyName: string } {
  const f = route[side].fields[m]!;
  return { className: f.className, propertyName: f.propertyName };
}

/** Class.property of each configured field, spelled once: metrics name it per value */
const FIELD_NAMES = new WeakMap<FieldRef, string>();

function fieldName(route: Route, side: 'request' | 'response', m: number): string {
  const f = route[side].fields[m]!;
  let name = FIELD_NAMES.get(f);
  if (name === undefined) FIELD_NAMES.set(f, (name = `${f.className}.${f.propertyName}`));
  return name;
}
