import type { Instance } from './batching.ts';
import { clientError, VeilClientError } from './errors.ts';

/**
 * Which fields of an object are protected, and as what: `{ email: 'Customer.email',
 * 'address.zip': 'Customer.zip' }`. A key is a path of dot-separated property names (nested
 * objects; no arrays); a value is the configured Class.property.
 */
export type FieldMap = Readonly<Record<string, string>>;

export interface CompiledField {
  path: readonly string[];
  className: string;
  propertyName: string;
}

export function compileFieldMap(map: FieldMap): CompiledField[] {
  return Object.entries(map).map(([path, target]) => {
    const segments = path.split('.');
    const dot = target.indexOf('.');
    if (segments.some((s) => s === '') || dot <= 0 || dot === target.length - 1 || target.indexOf('.', dot + 1) >= 0) {
      throw clientError('FIELD_MAP_INVALID', { pointer: `/${escape(path)}` });
    }
    return { path: segments, className: target.slice(0, dot), propertyName: target.slice(dot + 1) };
  });
}

/** Where a value was found: which object, which field, and its pointer in the caller's input. */
interface Location {
  object: number;
  field: CompiledField;
  pointer: string;
}

export interface Collected {
  instances: Instance[];
  locations: Location[];
}

/**
 * The mapped values of `objects`: strings only; absent, null and undefined fields are skipped
 * (nothing to protect); anything else fails with FIELD_NOT_STRING and its pointer, not its value.
 */
export function collect(objects: readonly object[], fields: readonly CompiledField[], pointerOf: (object: number) => string): Collected {
  const instances: Instance[] = [];
  const locations: Location[] = [];
  objects.forEach((object, index) => {
    for (const field of fields) {
      const value = read(object, field.path);
      if (value === undefined || value === null) continue;
      const pointer = `${pointerOf(index)}/${field.path.map(escape).join('/')}`;
      if (typeof value !== 'string') throw clientError('FIELD_NOT_STRING', { pointer });
      instances.push({ className: field.className, propertyName: field.propertyName, value });
      locations.push({ object: index, field, pointer });
    }
  });
  return { instances, locations };
}

/**
 * New objects with the transformed values in place: the objects on each mapped path are
 * copied (own enumerable properties), everything else is shared, and the inputs are untouched.
 */
export function apply<T extends object>(objects: readonly T[], collected: Collected, values: readonly string[]): T[] {
  const copies = objects.map((o) => ({ ...o }) as T);
  const copied = new Set<object>(copies);
  collected.locations.forEach((location, i) => {
    let node = copies[location.object] as Record<string, unknown>;
    const path = location.field.path;
    for (let s = 0; s < path.length - 1; s++) {
      let child = node[path[s]!] as Record<string, unknown>;
      if (!copied.has(child)) {
        child = { ...child };
        copied.add(child);
        node[path[s]!] = child;
      }
      node = child;
    }
    node[path[path.length - 1]!] = values[i];
  });
  return copies;
}

/**
 * Points a transform error (`/requests/<operation>/instances/<i>/...`) at the caller's field
 * instead; `indexOf` says which collected value an operation's instance is (default: operation 0's
 * instance i is value i).
 */
export function pointIntoObjects(
  error: unknown,
  collected: Collected,
  indexOf: (operation: number, instance: number) => number | undefined = (o, i) => (o === 0 ? i : undefined),
): unknown {
  if (!(error instanceof VeilClientError)) return error;
  return error.withPointers((pointer) => {
    const m = /^\/requests\/(\d+)\/instances\/(\d+)(\/.*)?$/.exec(pointer);
    const at = m ? indexOf(Number(m[1]), Number(m[2])) : undefined;
    const location = at === undefined ? undefined : collected.locations[at];
    return location ? location.pointer : pointer;
  });
}

function read(object: object, path: readonly string[]): unknown {
  let node: unknown = object;
  for (const segment of path) {
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, segment)) return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

/** RFC 6901 */
function escape(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}
