import { checkIdentifiers, combine, jsonSchemas, VeilError, type ErrorDetail, type TransformRequest } from '../engine/index.ts';
import type { ServiceConfig } from './service-config.ts';
import { DoorError } from '../errors/door-errors.ts';

/** The call-size limits of service.limits that bound a body's content (bodyBytes is Fastify's). */
export type BodyLimits = Pick<ServiceConfig['limits'], 'requests' | 'instancesPerCall' | 'valueLength'>;

/**
 * One pass over a POST /transform body for call-size limits, shape and identifiers, with the
 * engine's precedence, codes, pointers and messages: LIMIT_EXCEEDED (413: requests, then
 * instances in the call), VALUE_TOO_LONG (422: values over valueLength, the first 100), then
 * REQUEST_MALFORMED (400: every shape problem), then the identifier rules of spec §2.8 (400).
 *
 * The shape is the engine's transform request schema (its zod schema as JSON Schema), compiled
 * once into a tree that the walk follows; the limits are attached to the nodes they bound, so
 * values are looked at once. Messages are zod's, so a body gets the same answer it would get
 * from Engine.plan; test/http/transform-body.test.ts checks that against the engine.
 */
export function transformBodyChecker(limits: BodyLimits): (body: unknown) => TransformRequest {
  const root = compile(jsonSchemas()['transform-request.schema.json'], '');
  const requests = field(root, 'requests');
  const instances = field(arrayItems(requests), 'instances');
  const value = field(arrayItems(instances), 'value');
  requests.limit = { kind: 'requests', max: limits.requests };
  instances.limit = { kind: 'instances', max: limits.instancesPerCall };
  value.limit = { kind: 'value', max: limits.valueLength };

  return (body) => {
    const walk = new Walk(body);
    walk.visit(root, body, -1);
    if (walk.tooLong.length) {
      throw new VeilError('VALUE_TOO_LONG', `${walk.tooLong.length} value(s) longer than the limit of ${limits.valueLength} characters`, walk.tooLong);
    }
    if (walk.shape.length) throw combine(walk.shape);
    // the body has the schema's shape now; the §2.8 rules read only the guids of the three arrays
    const request = body as TransformRequest;
    const identifiers = checkIdentifiers(request);
    if (identifiers.length) throw combine(identifiers);
    return request;
  };
}

type Limit = { kind: 'requests' | 'instances' | 'value'; max: number };
/** One shape for every node (unused fields empty), so the walk's property reads stay monomorphic. */
interface Node {
  type: 'object' | 'array' | 'string';
  /** object: its fields in schema order, their nodes, whether each is required, the known names */
  names: readonly string[];
  children: readonly Node[];
  required: readonly boolean[];
  known: ReadonlySet<string>;
  /** array: the element node */
  items: Node | undefined;
  maxItems: number | undefined;
  minLength: number | undefined;
  maxLength: number | undefined;
  limit: Limit | undefined;
}

class Walk {
  readonly shape: ErrorDetail[] = [];
  readonly tooLong: ErrorDetail[] = [];
  private instances = 0;
  private readonly body: unknown;
  /** where the walk is: field names and indices (none needs escaping); a pointer only on a problem */
  private readonly path: (string | number)[] = [];
  constructor(body: unknown) {
    this.body = body;
  }

  /** `index`: the element's index in its array (the instance index of a value), -1 elsewhere. */
  visit(node: Node, value: unknown, index: number): void {
    switch (node.type) {
      case 'string':
        if (typeof value !== 'string') this.malformed(`Invalid input: expected string, received ${received(value)}`);
        else if (node.limit && value.length > node.limit.max && this.tooLong.length < 100) {
          this.tooLong.push({ code: 'VALUE_TOO_LONG', pointer: this.pointer(), instance: index, message: `value longer than ${node.limit.max} characters` });
        }
        if (node.minLength !== undefined || node.maxLength !== undefined) this.lengths(value, node.minLength, node.maxLength);
        return;
      case 'array': {
        if (!Array.isArray(value)) {
          this.malformed(`Invalid input: expected array, received ${received(value)}`);
          return this.lengths(value, undefined, node.maxItems);
        }
        if (node.limit) this.count(node.limit, value.length);
        // as zod: an array over its maxItems is refused without looking at its elements
        if (node.maxItems !== undefined && value.length > node.maxItems) return this.malformed(`Too big: expected array to have <=${node.maxItems} items`);
        const depth = this.path.push(0) - 1;
        for (let i = 0; i < value.length; i++) {
          this.path[depth] = i;
          this.visit(node.items!, value[i], i);
        }
        this.path.pop();
        return;
      }
      case 'object': {
        if (typeof value !== 'object' || value === null || Array.isArray(value))
          return this.malformed(`Invalid input: expected object, received ${received(value)}`);
        const record = value as Record<string, unknown>;
        const depth = this.path.push('') - 1;
        for (let i = 0; i < node.names.length; i++) {
          const v = record[node.names[i]!];
          if (v === undefined && !node.required[i]) continue;
          this.path[depth] = node.names[i]!;
          this.visit(node.children[i]!, v, index);
        }
        this.path.pop();
        let unknown: string[] | undefined;
        // for..in, as zod's strict objects (a JSON body has no inherited keys anyway)
        for (const key in record) if (!node.known.has(key)) (unknown ??= []).push(key);
        if (unknown) this.malformed(unrecognized(unknown));
      }
    }
  }

  private pointer(): string {
    return this.path.length ? `/${this.path.join('/')}` : '';
  }

  /**
   * zod's length checks: strings count code points; they also run on a value of the wrong type
   * that has a length (an array where a string belongs), adding their own issue after the type's.
   */
  private lengths(value: unknown, min: number | undefined, max: number | undefined): void {
    if (value === null || value === undefined || (min === undefined && max === undefined)) return;
    const units = (value as { length?: unknown }).length;
    if (units === undefined) return;
    const origin = Array.isArray(value) ? 'array' : typeof value === 'string' ? 'string' : 'unknown';
    const size = (bound: string) => (origin === 'unknown' ? `to be ${bound}` : `to have ${bound} ${origin === 'array' ? 'items' : 'characters'}`);
    if (min !== undefined) {
      const n = typeof value === 'string' && value.length >= min && value.length < min * 2 ? codePoints(value) : units;
      if (!((n as number) >= min)) this.malformed(`Too small: expected ${origin} ${size(`>=${min}`)}`);
    }
    if (max !== undefined) {
      const n = typeof value === 'string' && value.length > max ? codePoints(value) : units;
      if (!((n as number) <= max)) this.malformed(`Too big: expected ${origin} ${size(`<=${max}`)}`);
    }
  }

  /** The count limits outrank everything else, so the walk stops at the first one exceeded. */
  private count(limit: Limit, length: number): void {
    if (limit.kind === 'requests' && length > limit.max) {
      throw new DoorError('LIMIT_EXCEEDED', `the call holds ${length} requests; the limit is ${limit.max}`, {
        details: [{ code: 'LIMIT_EXCEEDED', pointer: '/requests', message: `at most ${limit.max} requests per call` }],
      });
    }
    if (limit.kind === 'instances' && (this.instances += length) > limit.max) {
      // the message gives the call's total: count the instance arrays not walked yet
      const total = (this.body as { requests: unknown[] }).requests.reduce((n: number, r) => n + lengthOf((r as { instances?: unknown })?.instances), 0);
      throw new DoorError('LIMIT_EXCEEDED', `the call holds ${total} instances; the limit is ${limit.max}`, {
        details: [{ code: 'LIMIT_EXCEEDED', pointer: '/requests', message: `at most ${limit.max} instances per call` }],
      });
    }
  }

  private malformed(message: string): void {
    const pointer = this.pointer();
    this.shape.push({ code: 'REQUEST_MALFORMED', pointer, message: `${pointer || '/'}: ${message}` });
  }
}

/** Unicode code points (a lone surrogate counts as one), as zod measures strings. */
function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    if ((s.charCodeAt(i) & 0xfc00) === 0xd800 && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n--;
      i++;
    }
  }
  return n;
}

function lengthOf(value: unknown): number {
  return Array.isArray(value) ? value.length : 0;
}

/** zod's name for the type it received (its parsedType), for JSON values. */
function received(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number' && Number.isNaN(value)) return 'NaN';
  return typeof value;
}

/**
 * The engine's message for unknown fields: names are echoed only when they look like field
 * names, since a client that puts values into keys must not get them back in an error (or a log).
 */
function unrecognized(keys: readonly string[]): string {
  const shown = keys.filter((k) => /^[A-Za-z][A-Za-z0-9_]{0,31}$/.test(k));
  const names = shown.map((k) => `"${k}"`).join(', ');
  const hidden = keys.length - shown.length;
  const parts = [...(names ? [names] : []), ...(hidden ? [`${hidden} whose name${hidden === 1 ? ' is' : 's are'} not shown`] : [])];
  return `unrecognized field${keys.length === 1 ? '' : 's'}: ${parts.join(' and ')}`;
}

const KNOWN = new Set([
  '$id',
  '$schema',
  'title',
  'description',
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'maxItems',
  'minLength',
  'maxLength',
]);

/**
 * The JSON Schema subset zod emits for the transform request. Any other keyword fails here, at
 * startup, rather than being silently ignored: the walk must refuse everything the engine does.
 */
function compile(schema: unknown, at: string): Node {
  const s = schema as Record<string, unknown>;
  const unsupported = Object.keys(s).filter((k) => !KNOWN.has(k));
  if (unsupported.length) throw new Error(`transform body checker: unsupported JSON Schema keyword(s) ${unsupported.join(', ')} at ${at || '/'}`);
  const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
  const node: Node = {
    type: 'string',
    names: [],
    children: [],
    required: [],
    known: new Set(),
    items: undefined,
    maxItems: num(s.maxItems),
    minLength: num(s.minLength),
    maxLength: num(s.maxLength),
    limit: undefined,
  };
  switch (s.type) {
    case 'string':
      return node;
    case 'array':
      return { ...node, type: 'array', items: compile(s.items, `${at}/items`) };
    case 'object': {
      if (s.additionalProperties !== false) throw new Error(`transform body checker: objects must be strict at ${at || '/'}`);
      const properties = Object.entries((s.properties ?? {}) as Record<string, unknown>);
      const required = new Set((s.required ?? []) as string[]);
      return {
        ...node,
        type: 'object',
        names: properties.map(([k]) => k),
        children: properties.map(([k, v]) => compile(v, `${at}/properties/${k}`)),
        required: properties.map(([k]) => required.has(k)),
        known: new Set(properties.map(([k]) => k)),
      };
    }
    default:
      throw new Error(`transform body checker: unsupported type ${String(s.type)} at ${at || '/'}`);
  }
}

function field(node: Node, name: string): Node {
  const found = node.type === 'object' ? node.children[node.names.indexOf(name)] : undefined;
  if (!found) throw new Error(`transform body checker: the schema has no field ${name}`);
  return found;
}

function arrayItems(node: Node): Node {
  if (node.type !== 'array' || !node.items) throw new Error('transform body checker: expected an array in the schema');
  return node.items;
}
