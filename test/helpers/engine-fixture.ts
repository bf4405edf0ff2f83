import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { compileVeilConfigText, type VeilConfig } from '../../src/app/config-file.ts';
import {
  compileConfigText,
  Engine,
  formatIssue,
  KEY_TYPES,
  MemoryKeyProvider,
  VeilError,
  type CompiledConfig,
  type EngineOptions,
  type Identity,
  type KeyType,
  type TransformRequest,
  type TransformResponse,
} from '../../src/engine/index.ts';
import { ERROR_CATALOG, type ErrorCode } from '../../src/errors/catalog.ts';

export const EXAMPLE_CONFIG_FILE = fileURLToPath(new URL('../../config/example.yaml', import.meta.url));
export const EXAMPLE_CONFIG_TEXT = readFileSync(EXAMPLE_CONFIG_FILE, 'utf8');

export const FIXTURES_DIR = fileURLToPath(new URL('../fixtures/', import.meta.url));

export function fixtureText(name: string): string {
  return readFileSync(`${FIXTURES_DIR}${name}`, 'utf8');
}

const CREATED_AT = '2025-03-04T05:06:07.000Z';

/** Compiles configuration text that must be valid; fails the test with every issue otherwise. */
export function compileOrFail(text: string, file = 'config.yaml'): CompiledConfig {
  const { config, issues } = compileConfigText(text);
  const errors = issues.filter((i) => i.severity === 'error');
  if (!config || errors.length) throw new Error(`configuration does not compile:\n${errors.map((i) => formatIssue(file, i)).join('\n')}`);
  return config;
}

/** Compiles a whole configuration file's text (all sections, src/app) that must be valid. */
export function veilConfigOrFail(text: string, file = 'config.yaml'): VeilConfig {
  const { config, issues } = compileVeilConfigText(text);
  const errors = issues.filter((i) => i.severity === 'error');
  if (!config || errors.length) throw new Error(`configuration does not compile:\n${errors.map((i) => formatIssue(file, i)).join('\n')}`);
  return config;
}

/**
 * A MemoryKeyProvider holding random material for every key the configuration references, of
 * the type the configuration gives it. A reference that pins version N gets versions 1..N (so
 * the pinned version exists and is primary); others get one version.
 */
export function keysFor(config: CompiledConfig): MemoryKeyProvider {
  const keys = new MemoryKeyProvider();
  for (const ref of config.keys.values()) {
    if (keys.info(ref.id)) continue;
    const type = ref.type as KeyType;
    const versions = ref.version ?? 1;
    for (let v = 1; v <= versions; v++) keys.add(ref.id, type, randomBytes(KEY_TYPES[type].sizes[0]), CREATED_AT);
  }
  return keys;
}

/** Adds a new random version of `id` (made primary), as a rotation would. */
export function rotate(keys: MemoryKeyProvider, id: string): number {
  const info = keys.info(id);
  if (!info) throw new Error(`no key ${id}`);
  return keys.add(id, info.type, randomBytes(KEY_TYPES[info.type].sizes[0]), CREATED_AT);
}

export interface EngineFixture {
  engine: Engine;
  config: CompiledConfig;
  keys: MemoryKeyProvider;
}

/** An engine on configuration text (config/example.yaml by default) with random keys. */
export function engineFixture(text: string = EXAMPLE_CONFIG_TEXT, options: Partial<Omit<EngineOptions, 'config'>> = {}): EngineFixture {
  const config = compileOrFail(text);
  const keys = (options.keys as MemoryKeyProvider | undefined) ?? keysFor(config);
  const engine = new Engine({ ...options, config, keys });
  return { engine, config, keys };
}

export type Evidence = { name: string; value: string };
export type InstanceSpec = { className?: string; propertyName: string; value: string } | readonly [propertyName: string, value: string];

/** One request of a body: its own rights and processing context, each with a fresh guid. */
export interface RequestSpec {
  /** Role evidences of the rights context (ignored when `rights` is given) */
  roles?: readonly string[];
  /** the rights context's evidences, verbatim */
  rights?: readonly Evidence[];
  /** the Action evidence of the processing context (ignored when `processing` is given) */
  action?: string;
  /** the processing context's evidences, verbatim */
  processing?: readonly Evidence[];
  /** default class of tuple instances: Customer */
  className?: string;
  instances?: readonly InstanceSpec[];
}

/**
 * A transform request body (spec §2.1) with fresh UUIDs: one rights context and one processing
 * context per request, in request order.
 */
export function body(...requests: RequestSpec[]): TransformRequest {
  const out: TransformRequest = { rightsContexts: [], processingContexts: [], requests: [] };
  for (const spec of requests) {
    const rc = randomUUID();
    const pc = randomUUID();
    out.rightsContexts.push({ guid: rc, evidences: [...(spec.rights ?? (spec.roles ?? []).map((value) => ({ name: 'Role', value })))] });
    out.processingContexts.push({ guid: pc, evidences: [...(spec.processing ?? (spec.action === undefined ? [] : [{ name: 'Action', value: spec.action }]))] });
    out.requests.push({
      guid: randomUUID(),
      rightsContext: rc,
      processingContext: pc,
      instances: (spec.instances ?? []).map((inst) =>
        isTuple(inst)
          ? { className: spec.className ?? 'Customer', propertyName: inst[0], value: inst[1] }
          : { className: inst.className ?? spec.className ?? 'Customer', propertyName: inst.propertyName, value: inst.value },
      ),
    });
  }
  return out;
}

/**
 * One request's spec: its rights context claims `roles` (one role or several), its processing
 * context's Action is `action`, and `instances` are Customer's unless they name a class.
 */
export function requestSpec(roles: string | readonly string[], action: string, ...instances: InstanceSpec[]): RequestSpec {
  return { roles: typeof roles === 'string' ? [roles] : roles, action, instances };
}

/** A body of one request (see requestSpec): body(requestSpec(roles, action, ...instances)). */
export function transformRequest(roles: string | readonly string[], action: string, ...instances: InstanceSpec[]): TransformRequest {
  return body(requestSpec(roles, action, ...instances));
}

function isTuple(inst: InstanceSpec): inst is readonly [string, string] {
  return Array.isArray(inst);
}

export function identity(...roles: string[]): Identity {
  return { subject: 'test', roles };
}

/** The values of one response, in instance order. */
export function valuesOf(response: TransformResponse, request = 0): string[] {
  const r = response.responses[request];
  if (!r) throw new Error(`no response ${request}`);
  return r.instances.map((i) => i.value);
}

/**
 * Runs `fn`, which must throw a VeilError with `code`; checks that its status and retriable
 * flag are the catalog's and returns it.
 */
export function veilErrorOf(fn: () => unknown, code: ErrorCode): VeilError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  if (!(caught instanceof VeilError)) {
    throw new Error(`expected VeilError ${code}, got ${caught === undefined ? 'no error' : String(caught)}`);
  }
  if (caught.code !== code) {
    throw new Error(`expected ${code}, got ${caught.code}: ${caught.message}\n${JSON.stringify(caught.details, null, 2)}`);
  }
  expect(caught.status).toBe(ERROR_CATALOG[code].status);
  expect(caught.retriable).toBe(ERROR_CATALOG[code].retriable);
  return caught;
}

/** Replaces one character in the middle of a base64url value by another base64url character. */
export function tamper(value: string): string {
  const i = Math.floor(value.length / 2);
  return value.slice(0, i) + (value[i] === 'A' ? 'B' : 'A') + value.slice(i + 1);
}

/** Rewrites the key version in the 5-byte header of a keyed output. */
export function withKeyVersion(value: string, version: number): string {
  const bytes = Buffer.from(value, 'base64url');
  bytes.writeUInt32BE(version, 1);
  return bytes.toString('base64url');
}

/**
 * config/example.yaml's card-fpe keeps a card's first 6 and last 4 digits and encrypts the ones
 * between with FF1, a permutation of them: under a random key, a 16-digit card (6 digits
 * encrypted, 10^6 values) comes out as it went in for one key in 10^6, and "the output differs
 * from the card" fails by chance. This is the card whose encrypted digits are one higher (mod
 * 10^n, separators in place): when a card came out unchanged, it must change under the same key
 * — an FF1 step that encrypts nothing fails both, a working one both for one key in 10^12.
 */
export function nextCard(card: string): string {
  const chars = [...card];
  const at = chars.flatMap((c, i) => (c >= '0' && c <= '9' ? [i] : [])).slice(6, -4);
  const middle = BigInt(at.map((i) => chars[i]).join('')) + 1n;
  const digits = (middle % 10n ** BigInt(at.length)).toString().padStart(at.length, '0');
  at.forEach((i, k) => (chars[i] = digits[k]!));
  return chars.join('');
}

/**
 * `out`, card-fpe's output for `card`, differs from it, or `protect` changes nextCard(card) (see
 * there). With an asynchronous `protect` (over HTTP), await what it returns.
 */
export function expectCardChanged(card: string, out: string, protect: (card: string) => string): void;
export function expectCardChanged(card: string, out: string, protect: (card: string) => Promise<string>): Promise<void>;
export function expectCardChanged(card: string, out: string, protect: (card: string) => string | Promise<string>): void | Promise<void> {
  if (out !== card) return;
  const next = nextCard(card);
  const check = (again: string) => void expect(again, `${card} came out unchanged (FF1 under this key fixes it): ${next} must change`).not.toBe(next);
  const again = protect(next);
  return typeof again === 'string' ? check(again) : again.then(check);
}
