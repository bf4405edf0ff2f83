import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENGINE_ERRORS, VeilError } from '../../src/engine/index.ts';
import { CATALOGS, ERROR_CATALOG } from '../../src/errors/catalog.ts';
import { DoorError } from '../../src/errors/door-errors.ts';
import { AuditError } from '../../src/audit/errors.ts';
import { ControlError } from '../../src/control/errors.ts';
import { GatewayError } from '../../src/gateway/errors.ts';
import { IdentityError, OAuthError } from '../../src/identity/errors.ts';
import { OAUTH_ERRORS } from '../../src/errors/codes.ts';
import { KeystoreError } from '../../src/keystore/errors.ts';
import { PortalError } from '../../src/portal/errors.ts';
import { problemOf } from '../../src/errors/problem.ts';
import { StreamError } from '../../src/stream/stream-error.ts';

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
const rows = new Map(
  [...doc.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \| (yes|no) \| (.+) \|$/gm)].map((m) => [m[1]!, { status: Number(m[2]), retriable: m[3] === 'yes' }]),
);

describe("error catalog: each layer's codes beside it, gathered in src/errors", () => {
  it('docs/errors.md lists exactly the codes of ERROR_CATALOG with their status and retriable', () => {
    expect([...rows.keys()].sort()).toEqual(Object.keys(ERROR_CATALOG).sort());
    for (const [code, entry] of Object.entries(ERROR_CATALOG)) {
      expect(rows.get(code), code).toEqual({ status: entry.status, retriable: entry.retriable });
    }
  });

  it('uses client statuses for caller mistakes; retriable only for rate limits and service-side outages', () => {
    for (const [code, entry] of Object.entries(ERROR_CATALOG)) {
      expect(entry.status, code).toBeGreaterThanOrEqual(400);
      if (entry.retriable) expect(entry.status === 429 || entry.status >= 500, code).toBe(true);
    }
  });

  it('every code has one home; the engine keeps only its own (requests, contexts, fields, values, keys in use, configuration)', () => {
    const homes = Object.values(CATALOGS).flatMap((c) => Object.keys(c));
    expect(new Set(homes).size).toBe(homes.length);
    expect(homes.length).toBe(Object.keys(ERROR_CATALOG).length);
    expect(Object.keys(ENGINE_ERRORS).length).toBeLessThanOrEqual(25);
    expect(Object.keys(CATALOGS.stream)).toContain('RECORD_MALFORMED');
    expect(Object.keys(CATALOGS.gateway)).toContain('UPSTREAM_TIMEOUT');
    expect(Object.keys(CATALOGS.keystore)).toContain('KMS_UNAVAILABLE');
    expect(Object.keys(ENGINE_ERRORS)).not.toContain('KMS_UNAVAILABLE');
  });

  it.each([
    [new KeystoreError('KMS_UNAVAILABLE', 'm'), 503, true],
    [new ControlError('CONTROL_STORE_UNAVAILABLE', 'm'), 503, true],
    [new IdentityError('TOKEN_EXPIRED', 'm'), 401, false],
    [new DoorError('BODY_TOO_LARGE', 'm'), 413, false],
    [new AuditError('AUDIT_UNAVAILABLE', 'm'), 503, true],
    [new PortalError('CSRF_TOKEN_INVALID', 'm'), 403, false],
    [new GatewayError('UPSTREAM_UNAVAILABLE', 'm'), 502, true],
    [new StreamError('DEADLINE_EXCEEDED', 'm'), 504, false],
    [new StreamError('UNMAPPED_PERSONAL_DATA', 'm', { path: 'note', kind: 'email' }), 422, false],
    [new StreamError('TRANSACTION_ABORTED', 'm'), 503, true],
    [new OAuthError('invalid_client', 'm'), 401, false],
    [new OAuthError('slow_down', 'm', 3), 429, true],
  ] as const)("a layer's error is a VeilError with its catalog's status, title and retriable: %s", (error, status, retriable) => {
    expect(error).toBeInstanceOf(VeilError);
    const catalogs: Readonly<Record<string, { title: string }>> = { ...ERROR_CATALOG, ...OAUTH_ERRORS };
    expect([error.status, error.retriable, error.title]).toEqual([status, retriable, catalogs[error.code]!.title]);
    expect(Object.keys(JSON.parse(JSON.stringify(error))).sort()).toEqual(['code', 'details', 'message', 'retriable']);
  });

  it("OAuth's codes (the token endpoint's own body) are identity's error type, apart from the problem codes, and listed apart in docs/errors.md", () => {
    const oauthRows = new Map(
      [...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \| (yes|no) \| (.+) \|$/gm)].map((m) => [m[1]!, { status: Number(m[2]), retriable: m[3] === 'yes' }]),
    );
    expect(Object.fromEntries(oauthRows)).toEqual(
      Object.fromEntries(Object.entries(OAUTH_ERRORS).map(([code, e]) => [code, { status: e.status, retriable: e.retriable }])),
    );
    expect(Object.keys(OAUTH_ERRORS).filter((code) => Object.hasOwn(ERROR_CATALOG, code))).toEqual([]);
    const refusal = new OAuthError('slow_down', 'm', 3);
    expect([refusal instanceof IdentityError, refusal.retryAfter, refusal.name]).toEqual([true, 3, 'OAuthError']);
  });

  it("a layer's error keeps its cause and details", () => {
    const cause = new Error('below');
    const e = new GatewayError('FIELD_SHAPE_MISMATCH', 'm', { cause, details: [{ code: 'FIELD_SHAPE_MISMATCH', pointer: '/a', message: 'x' }] });
    expect([e.cause, e.details.length, e.name]).toEqual([cause, 1, 'GatewayError']);
  });
});

describe('docs/errors.md: where the offending elements appear (issue 43: it said `details` for HTTP too)', () => {
  const bullet = (door: string) => new RegExp(`^- \\*\\*${door}\\*\\*[\\s\\S]*?(?=^- |^\\*\\*|^$)`, 'm').exec(doc)?.[0] ?? '';
  const named = (text: string) => new Set([...text.matchAll(/`([a-z]+)`/g)].map((m) => m[1]!));
  const problemSchema = JSON.parse(readFileSync(new URL('../../schemas/openapi.json', import.meta.url), 'utf8')).components.schemas.Problem as {
    properties: Record<string, unknown>;
  };

  it('names every member of the problem details schemas/openapi.json gives, `errors` among them, and not `details`', () => {
    const http = named(bullet('HTTP'));
    expect([...http].filter((k) => !Object.hasOwn(problemSchema.properties, k))).toEqual([]);
    expect(Object.keys(problemSchema.properties).filter((k) => !http.has(k))).toEqual([]);
    expect(http.has('details')).toBe(false);
  });

  it("says what the service answers: an error with elements as `errors` and `pointer`, the command line's JSON as `details`", () => {
    const error = new GatewayError('FIELD_SHAPE_MISMATCH', 'm', { details: [{ code: 'FIELD_SHAPE_MISMATCH', pointer: '/a', message: 'x' }] });
    const problem = problemOf(error, 'r1');
    expect(Object.keys(problem).filter((k) => !Object.hasOwn(problemSchema.properties, k))).toEqual([]);
    expect(problem).toMatchObject({ errors: error.details, pointer: '/a', instance: 'urn:veil:request:r1' });
    expect(Object.keys(problemOf(new IdentityError('TOKEN_MISSING', 'm')))).not.toContain('errors');
    expect(named(bullet('The command line')).has('details')).toBe(true);
    expect(Object.keys(error.toJSON())).toContain('details');
  });
});
