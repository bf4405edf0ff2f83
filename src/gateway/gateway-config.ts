import { isIP } from 'node:net';
import { z } from 'zod';
import { DEFAULT_THRESHOLD, GUARD_KINDS, THRESHOLDS } from '../drift-guard/index.ts';
import { nameSchema, ROLE, type CompiledConfig, type ConfigIssue } from '../engine/index.ts';
import { pathPatternProblem } from './route-match.ts';
import { GatewayFault } from './errors.ts';
import { canonicalSelector, parseSelector } from './selector.ts';

const fieldRef = z.string().regex(/^[A-Za-z][A-Za-z0-9_-]*\.[A-Za-z][A-Za-z0-9_-]*$/, 'must be Class.property');

/** A selector string that parses (src/gateway/selector.ts); a syntax error is a config error at its pointer. */
const selectorText = z.string().superRefine((text, ctx) => {
  try {
    parseSelector(text);
  } catch (e) {
    if (!(e instanceof GatewayFault && e.code === 'SELECTOR_SYNTAX')) throw e;
    ctx.addIssue({ code: 'custom', message: `selector ${e.message}` });
  }
});

const pathPattern = z.string().superRefine((text, ctx) => {
  const problem = pathPatternProblem(text);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const method = z.string().regex(/^(\*|[A-Z]{1,20})$/, 'must be an HTTP method in capitals, or *');

/** how selectors match JSON keys: `insensitive` (default) as ASP.NET Core and Go bind them, or `exact` */
const keysMode = z.enum(['insensitive', 'exact']);

/**
 * The unmapped guard (drift-guard.ts): what personal data found by veil's detectors at a path no
 * request selector names does to the request. `refuse` (default): 422 UNMAPPED_PERSONAL_DATA naming
 * the path and kind, nothing forwarded (the stream's `dead-letter`); `protect`: a kind listed in
 * `protect` is protected as that Class.property and forwarded (other kinds, and personal data as an
 * object key, are still refused); `pass`: not looked at. `allow`: selectors (`notes`,
 * `items[*].sku`) the guard does not look at, nor anything under them, matched with the route's
 * key rule; `threshold`: how likely a finding must be, as a pipeline's. Runs on routes with
 * request selectors only.
 */
const UNMAPPED_ACTIONS = ['refuse', 'protect', 'pass'] as const;
export const gatewayUnmappedSchema = z.union([
  z.enum(UNMAPPED_ACTIONS),
  z.strictObject({
    action: z.enum(UNMAPPED_ACTIONS).default('refuse'),
    allow: z.array(selectorText).max(256).default([]),
    protect: z.partialRecord(z.enum(GUARD_KINDS), fieldRef).default({}),
    threshold: z.enum(THRESHOLDS).default(DEFAULT_THRESHOLD),
  }),
]);

export type GatewayUnmapped = z.infer<typeof gatewayUnmappedSchema>;

/** The guard's configuration with its shorthand (`unmapped: pass`) spelled out. */
export interface UnmappedPolicyConfig {
  action: (typeof UNMAPPED_ACTIONS)[number];
  allow: readonly string[];
  protect: Partial<Record<(typeof GUARD_KINDS)[number], string>>;
  /** how likely a value must be personal data to be a finding (src/drift-guard/value-kinds.ts) */
  threshold: (typeof THRESHOLDS)[number];
}

export function unmappedPolicyConfig(u: GatewayUnmapped): UnmappedPolicyConfig {
  return typeof u === 'string' ? { action: u, allow: [], protect: {}, threshold: DEFAULT_THRESHOLD } : u;
}

/** An IPv4 or IPv6 address, or a CIDR block of either. */
const addressOrBlock = z.string().superRefine((text, ctx) => {
  const [address, bits, extra] = text.split('/');
  const family = isIP(address ?? '');
  const max = family === 4 ? 32 : 128;
  if (family === 0 || extra !== undefined || (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= max))) {
    ctx.addIssue({ code: 'custom', message: 'must be an IP address or a CIDR block (10.0.0.0/8, fd00::/8)' });
  }
});

/** One route: requests it matches, the request-body fields it protects and the response-body fields it unprotects. */
export const gatewayRouteSchema = z.strictObject({
  /** names the route in logs and metrics (the path is never logged: it may hold identifiers) */
  name: nameSchema.optional(),
  method: z.union([method, z.array(method).min(1)]),
  /**
   * `/customers`, `/customers/:id`, `/static/*`; matched on the decoded path without `;`
   * parameters, case-insensitively unless `paths.case` is `sensitive`
   */
  path: pathPattern,
  /** forward the caller's Authorization header on this route (default: gateway.forwardAuthorization, false) */
  forwardAuthorization: z.boolean().optional(),
  /** accept a request body on GET, HEAD, DELETE, OPTIONS and TRACE too (default: refused, 400 BODY_NOT_ALLOWED) */
  allowBody: z.boolean().default(false),
  /** accept `;` parameters in path segments (`/files;v=2`), forwarded as sent (default: refused, 400 PATH_NOT_CANONICAL) */
  pathParameters: z.boolean().default(false),
  /** how this route's selectors match JSON keys (default: gateway.keys) */
  keys: keysMode.optional(),
  /** the unmapped guard on this route's request bodies, replacing gateway.unmapped as a whole (default: gateway.unmapped) */
  unmapped: gatewayUnmappedSchema.optional(),
  /** request-body fields to protect before the request is forwarded */
  request: z
    .array(z.strictObject({ select: selectorText, field: fieldRef }))
    .max(256)
    .default([]),
  /** response-body fields to unprotect with the caller's roles */
  response: z
    .array(
      z.strictObject({
        select: selectorText,
        field: fieldRef,
        /** the action to run instead when the caller may not unprotect the field (e.g. Mask); absent: the protected value stays */
        ifDenied: nameSchema.optional(),
      }),
    )
    .max(256)
    .default([]),
});

/** The configuration's `gateway` section: `veil gateway`, a reverse proxy that protects and unprotects JSON fields. */
export const gatewaySchema = z.strictObject({
  /** the application behind the gateway; its path, if any, prefixes every forwarded path */
  upstream: z.url({ protocol: /^https?$/ }),
  listen: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: z.number().int().min(0).max(65_535).default(8081),
    })
    .prefault({}),
  limits: z
    .strictObject({
      /** request bodies of routes with selectors, on the wire and decoded */
      bodyBytes: z
        .number()
        .int()
        .min(1024)
        .max(64 * 1024 * 1024)
        .default(1024 * 1024),
      /** upstream response bodies of routes with response selectors, on the wire and decoded */
      responseBytes: z
        .number()
        .int()
        .min(1024)
        .max(256 * 1024 * 1024)
        .default(4 * 1024 * 1024),
      /** selected values per body */
      valuesPerBody: z.number().int().min(1).max(1_000_000).default(10_000),
      /** a request body must arrive within this long of its headers, else 408 REQUEST_TIMEOUT */
      bodyReadTimeoutMs: z.number().int().min(100).max(600_000).default(30_000),
      /** the upstream must send its response headers within this long, else 504 UPSTREAM_TIMEOUT */
      upstreamTimeoutMs: z.number().int().min(100).max(600_000).default(30_000),
      /**
       * a streamed body (request bodies of routes without request selectors, response bodies of
       * routes without response selectors) must arrive in whole within this long of its headers;
       * else the exchange is cut: 408 REQUEST_TIMEOUT when no response has started, the connection
       * closed otherwise
       */
      streamTimeoutMs: z.number().int().min(100).max(3_600_000).default(300_000),
    })
    .prefault({}),
  /** the actions the gateway asks for, as the `Action` evidence of its processing contexts */
  actions: z
    .strictObject({
      protect: nameSchema.default('Protect'),
      unprotect: nameSchema.default('Unprotect'),
    })
    .prefault({}),
  /**
   * Request bodies are protected with these roles instead of the caller's: any caller with a valid
   * token may then send data through the gateway, whatever its own grants. Absent: the caller's roles.
   */
  protectAs: z.strictObject({ roles: z.array(nameSchema).min(1).max(64) }).optional(),
  /** forward the caller's Authorization header upstream (it is a veil token; default: dropped on every route); routes may override */
  forwardAuthorization: z.boolean().default(false),
  /** how selectors match JSON keys: `insensitive` (default: every spelling of a key is protected) or `exact`; routes may override */
  keys: keysMode.default('insensitive'),
  /**
   * the unmapped guard: personal data at a path no request selector names is refused (default),
   * protected or passed; on routes with request selectors; routes may override
   */
  unmapped: gatewayUnmappedSchema.default('refuse'),
  /** how route paths match: `insensitive` (default: `/Customers` is `/customers`) or `sensitive` for an upstream that routes by exact case */
  paths: z.strictObject({ case: z.enum(['insensitive', 'sensitive']).default('insensitive') }).prefault({}),
  /**
   * peers (addresses, CIDR blocks) whose X-Forwarded-For/-Proto/-Host and Forwarded headers are
   * kept and extended; from any other peer they are replaced by the gateway's own (default: none)
   */
  trustedProxies: z.array(addressOrBlock).max(256).default([]),
  /** serve HTTPS: PEM certificate (chain) and private key files, read at start */
  tls: z.strictObject({ certFile: z.string().min(1), keyFile: z.string().min(1) }).optional(),
  /** requests no route matches: refused (404, default) or forwarded untouched */
  unmatched: z.enum(['refuse', 'forward']).default('refuse'),
  /** the gateway's own liveness path; `<healthPath>` and its readiness sibling are never forwarded */
  healthPath: z
    .string()
    .regex(/^\/[A-Za-z0-9._~/-]+$/)
    .default('/_veil/healthz'),
  /** the gateway's Prometheus metrics (labels: route names, fields, statuses, error codes); never forwarded */
  metricsPath: z
    .string()
    .regex(/^\/[A-Za-z0-9._~/-]+$/)
    .default('/_veil/metrics'),
  routes: z.array(gatewayRouteSchema).min(1).max(1000),
});

export type GatewayConfig = z.infer<typeof gatewaySchema>;

/**
 * Cross-checks of the gateway section against the engine's configuration, pointers relative to the
 * section: every field is a configured class.property with a sequence for the action the gateway
 * runs on it, every action is selected by an `Action` evidence, no route selects one value twice,
 * and protectAs roles are used by some rights context (warning).
 */
export function gatewayIssues(gateway: GatewayConfig, engine: CompiledConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const error = (pointer: string, message: string) => issues.push({ severity: 'error', pointer, message });
  const selectable = new Map<string, boolean>();
  const checkAction = (action: string, pointer: string) => {
    if (!selectable.has(action)) selectable.set(action, actionSelectable(engine, action));
    if (!selectable.get(action))
      error(pointer, `no processing context is selected by the evidence Action=${action} alone, so the gateway cannot ask for ${action}`);
  };
  const checkField = (ref: string, action: string, pointer: string) => {
    const [cls, prop] = ref.split('.') as [string, string];
    const field = engine.classes.get(cls)?.get(prop);
    if (!field) error(pointer, `${ref} is not a configured class.property`);
    else if (!field.actions.has(action)) error(pointer, `${ref} has no sequence for ${action}`);
  };
  const checkUnmapped = (u: GatewayUnmapped, at: string) => {
    const policy = unmappedPolicyConfig(u);
    const kinds = Object.entries(policy.protect);
    kinds.forEach(([kind, field]) => checkField(field, gateway.actions.protect, `${at}/protect/${kind}`));
    if (policy.action === 'protect' && kinds.length === 0)
      error(`${at}/protect`, 'action protect names no kind to protect: map a kind to a Class.property, e.g. email: Customer.email');
    if (policy.action !== 'protect' && kinds.length > 0)
      issues.push({
        severity: 'warning',
        pointer: `${at}/protect`,
        message: `kinds are protected only with action protect: with action ${policy.action} they are ${policy.action === 'pass' ? 'not looked at' : 'refused'}`,
      });
  };
  if (gateway.metricsPath === gateway.healthPath) error('/metricsPath', 'metricsPath and healthPath must differ');
  checkAction(gateway.actions.protect, '/actions/protect');
  checkAction(gateway.actions.unprotect, '/actions/unprotect');
  gateway.routes.forEach((route, r) => {
    const at = `/routes/${r}`;
    const fold = (route.keys ?? gateway.keys) === 'insensitive';
    const seen = (list: readonly { select: string }[], side: string) => {
      const exact = list.map((s) => canonicalSelector(parseSelector(s.select)));
      const canonical = list.map((s) => canonicalSelector(parseSelector(s.select), fold));
      canonical.forEach((c, i) => {
        if (canonical.indexOf(c) === i) return;
        const why = exact.indexOf(exact[i]!) === i ? ` (keys match case-insensitively: keys: exact tells them apart)` : '';
        error(`${at}/${side}/${i}/select`, `selector ${exact[i]} is listed twice in this route's ${side} selectors${why}`);
      });
    };
    route.request.forEach((s, i) => checkField(s.field, gateway.actions.protect, `${at}/request/${i}/field`));
    route.response.forEach((s, i) => {
      checkField(s.field, gateway.actions.unprotect, `${at}/response/${i}/field`);
      if (s.ifDenied !== undefined) {
        checkField(s.field, s.ifDenied, `${at}/response/${i}/ifDenied`);
        checkAction(s.ifDenied, `${at}/response/${i}/ifDenied`);
      }
    });
    seen(route.request, 'request');
    seen(route.response, 'response');
    if (route.unmapped !== undefined) {
      if (route.request.length === 0)
        issues.push({
          severity: 'warning',
          pointer: `${at}/unmapped`,
          message: 'the unmapped guard runs on routes with request selectors only: this route pipes its request body untouched',
        });
      else checkUnmapped(route.unmapped, `${at}/unmapped`);
    }
  });
  checkUnmapped(gateway.unmapped, '/unmapped');
  const roles = new Set(engine.rightsContexts.flatMap((c) => c.evidences.filter(([n]) => n === ROLE).map(([, v]) => v)));
  gateway.protectAs?.roles.forEach((role, i) => {
    if (!roles.has(role)) issues.push({ severity: 'warning', pointer: `/protectAs/roles/${i}`, message: `role "${role}" is used by no rights context` });
  });
  return issues;
}

/** Whether the processing contexts select `action` for the evidences [Action=action] (the engine's matching rule). */
function actionSelectable(engine: CompiledConfig, action: string): boolean {
  const matches = engine.processingContexts.filter((c) => c.evidences.every(([n, v]) => n === 'Action' && v === action));
  const best = Math.max(0, ...matches.map((c) => c.evidences.length));
  const top = matches.filter((c) => c.evidences.length === best);
  return top.length === 1 && top[0]!.action === action;
}
