import { randomUUID } from 'node:crypto';
import type { AuditSink } from '../audit/index.ts';
import { GuardedTransform, type GuardedCaller } from '../audit/index.ts';
import {
  pooledRandom,
  traceSteps,
  type CompiledConfig,
  type Engine,
  type ErrorDetail,
  type KeyProvider,
  type TracedStep,
  type TransformRequest,
  type TransformResponse,
} from '../engine/index.ts';
import { ERROR_CATALOG } from '../errors/catalog.ts';

/** Nothing real is revealed on sandbox keys: their calls are not recorded. */
const DISCARD: AuditSink = { record: async () => {}, close: async () => {} };
const random = pooledRandom();

export interface TesterSetup {
  config: CompiledConfig;
  engine: Engine;
  keys: KeyProvider;
  /** live keys: the real audit sink; sandbox keys: none */
  audit?: AuditSink;
  caller: GuardedCaller;
  now: () => Date;
}

export interface CallError {
  code: string;
  message: string;
  details: readonly ErrorDetail[];
}

export interface Call {
  request: TransformRequest;
  response?: TransformResponse;
  error?: CallError;
}

export interface PropertyResult {
  propertyName: string;
  input: string;
  protected?: string;
  protectError?: CallError;
  deterministic?: boolean;
  read?: string;
  readError?: CallError;
  roundTrip?: boolean;
  format?: { ok: boolean; note: string };
  protectSteps: TracedStep[];
  readSteps: TracedStep[];
}

export interface TesterRun {
  protect: Call;
  read?: Call;
  properties: PropertyResult[];
}

/** A §2.1 request: one rights context (Role), one processing context (Action), one request. */
export function transformRequest(role: string, action: string, className: string, values: readonly [string, string][]): TransformRequest {
  const rights = randomUUID();
  const processing = randomUUID();
  return {
    rightsContexts: [{ guid: rights, evidences: [{ name: 'Role', value: role }] }],
    processingContexts: [{ guid: processing, evidences: [{ name: 'Action', value: action }] }],
    requests: [
      {
        guid: randomUUID(),
        rightsContext: rights,
        processingContext: processing,
        instances: values.map(([propertyName, value]) => ({ className, propertyName, value })),
      },
    ],
  };
}

/**
 * One call through GuardedTransform, the one place where "audit before cleartext leaves" lives:
 * on live keys an unprotect is recorded before its values come back, and refused if it cannot be.
 */
async function call(setup: TesterSetup, request: TransformRequest): Promise<Call> {
  const guard = new GuardedTransform({ engine: setup.engine, audit: setup.audit ?? DISCARD, now: setup.now, channel: 'portal', scope: 'revealing' });
  const outcome = await guard.run({ requestId: randomUUID(), body: request, authenticate: async () => setup.caller, admit: () => request, warn: () => {} });
  if (outcome.ok) return { request, response: outcome.response };
  return { request, error: { code: outcome.error.code, message: outcome.error.message, details: outcome.error.details } };
}

const valuesOf = (c: Call) => new Map((c.response?.responses[0]?.instances ?? []).map((i) => [i.propertyName, i.value]));

/** The combined call; when it fails, each value alone, so every property gets its own result or error. */
async function perProperty(
  setup: TesterSetup,
  role: string,
  action: string,
  className: string,
  values: [string, string][],
): Promise<{ combined: Call; each: Map<string, { value?: string; error?: CallError }> }> {
  const combined = await call(setup, transformRequest(role, action, className, values));
  const each = new Map<string, { value?: string; error?: CallError }>();
  if (!combined.error) {
    for (const [p, v] of valuesOf(combined)) each.set(p, { value: v });
    return { combined, each };
  }
  for (const [p, v] of values) {
    const alone = await call(setup, transformRequest(role, action, className, [[p, v]]));
    each.set(p, alone.error ? { error: alone.error } : { value: valuesOf(alone).get(p)! });
  }
  return { combined, each };
}

/**
 * The tester's cycle for one class: Protect every given value (twice, for determinism), then the
 * reading action (Unprotect, Mask, …) on what Protect returned, with step-by-step traces, the
 * round trip and format checks. Values live only in this call and the page it renders.
 */
export async function runTester(
  setup: TesterSetup,
  input: { className: string; role: string; action: string; values: [string, string][] },
): Promise<TesterRun> {
  const { className, role, action, values } = input;
  const first = await perProperty(setup, role, 'Protect', className, values);
  const second = await perProperty(setup, role, 'Protect', className, values);
  const protectedValues = values.flatMap(([p]) => (first.each.get(p)?.value === undefined ? [] : [[p, first.each.get(p)!.value!] as [string, string]]));
  const read = protectedValues.length ? await perProperty(setup, role, action, className, protectedValues) : undefined;
  const properties = values.map(([propertyName, value]): PropertyResult => {
    const p = first.each.get(propertyName);
    const again = second.each.get(propertyName);
    const r = read?.each.get(propertyName);
    const result: PropertyResult = { propertyName, input: value, protectSteps: [], readSteps: [] };
    if (p?.error) result.protectError = p.error;
    if (p?.value !== undefined) {
      result.protected = p.value;
      result.deterministic = again?.value === p.value;
      // traces only after the guarded call for the same value succeeded: authorization came first
      result.protectSteps = traceSteps(setup.config, setup.keys, random, className, propertyName, 'Protect', value);
      result.format = formatCheck(setup.config, className, propertyName, value, p.value);
    }
    if (r?.error) result.readError = r.error;
    if (r?.value !== undefined) {
      result.read = r.value;
      result.roundTrip = r.value === value;
      result.readSteps = traceSteps(setup.config, setup.keys, random, className, propertyName, action, p!.value!);
    }
    return result;
  });
  return { protect: first.combined, ...(read ? { read: read.combined } : {}), properties };
}

/** FPE keeps length and alphabet: same length, separators in place, digits stay digits when the input was digits. */
export function formatCheck(
  config: CompiledConfig,
  className: string,
  propertyName: string,
  input: string,
  output: string,
): { ok: boolean; note: string } | undefined {
  const plan = config.classes.get(className)?.get(propertyName)?.actions.get('Protect');
  const steps = plan ? (config.sequences.get(plan.sequence)?.steps ?? []) : [];
  if (!steps.some((s) => s.type === 'ff1' || s.type === 'ff3-1')) return undefined;
  const a = [...input];
  const b = [...output];
  if (a.length !== b.length) return { ok: false, note: `length ${a.length} became ${b.length}` };
  const alnum = /[\p{L}\p{N}]/u;
  const moved = a.findIndex((c, i) => !alnum.test(c) && b[i] !== c);
  if (moved >= 0) return { ok: false, note: `separator at position ${moved + 1} changed` };
  const digits = (s: string[]) => s.filter((c) => alnum.test(c)).every((c) => /\d/.test(c));
  if (digits(a) && !digits(b)) return { ok: false, note: 'digits became other characters' };
  return { ok: true, note: `length ${a.length} and separators kept${digits(a) ? ', digits stay digits' : ''}` };
}

/** A saved test case's outcome on sandbox keys: what it expects, what happened, pass or fail. */
export async function runTestCase(
  setup: TesterSetup,
  tc: { className: string; propertyName: string; role: string; action: string; value: string; expect: string },
): Promise<{ pass: boolean; got: string }> {
  const got = await (async () => {
    const p = await call(setup, transformRequest(tc.role, 'Protect', tc.className, [[tc.propertyName, tc.value]]));
    if (p.error) return statusOf(p.error.code) === 403 ? 'denied' : `error ${p.error.code}`;
    const protectedValue = valuesOf(p).get(tc.propertyName)!;
    const r = await call(setup, transformRequest(tc.role, tc.action, tc.className, [[tc.propertyName, protectedValue]]));
    if (r.error) return statusOf(r.error.code) === 403 ? 'denied' : `error ${r.error.code}`;
    const value = valuesOf(r).get(tc.propertyName)!;
    if (value === tc.value) return 'round-trip';
    return value === protectedValue ? 'changed' : 'masked';
  })();
  return { pass: got === tc.expect, got };
}

function statusOf(code: string): number {
  return Object.hasOwn(ERROR_CATALOG, code) ? ERROR_CATALOG[code as keyof typeof ERROR_CATALOG].status : 500;
}
