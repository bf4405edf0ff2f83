import { foldKey } from '../json-bytes/paths.ts';
import type { PlaceStep } from '../json-bytes/scan.ts';
import { isUtf8 } from 'node:buffer';
import { contextOf, LIKELY, unmappedKeyKind, unmappedValueKind, type GuardKind } from './value-kinds.ts';
import { formatPath, parentContext, type AllowedPath } from './json-guard.ts';

/** Personal data in a decoded record where no mapping looks: the path and kind — never the value. */
export interface ObjectFinding {
  path: string;
  kind: GuardKind;
  /** the finding is a map key, not a value */
  key: boolean;
  /** where the value sits, to protect it in place: its parent and the key or index there (absent for a key) */
  parent?: Record<string, unknown> | unknown[];
  at?: string | number;
}

/** A tree of mapped paths: a key's subtree, `[]` for array elements, and `leaf` where a mapped value sits. */
export interface PathTree {
  keys: Map<string, PathTree>;
  each?: PathTree;
  leaf: boolean;
}

/**
 * The unmapped guard over a decoded record (an Avro or Protobuf value as the serde decoded it):
 * every string, integer and map key at a path no mapping names and no allowed path covers is
 * checked by the guard's detectors; bytes (Avro `bytes` and `fixed`) that are valid UTF-8 are
 * checked as the text they hold. A map key is checked on its own, and names its value as a field
 * name does (`attributes.mobile`). Paths are pipeline paths (`contacts[].email`); keys that are
 * data show as `*`.
 */
export class ObjectGuard {
  private readonly mapped: PathTree;
  private readonly allow: readonly AllowedPath[];
  private readonly fold: boolean;
  /** the likelihood (value-kinds.ts) a finding needs */
  readonly threshold: number;

  /** `mapped`: the pipeline's record paths (`cards[].number`); `fold`: keys match case-insensitively */
  constructor(mapped: readonly string[], allow: readonly AllowedPath[], fold: boolean, threshold = LIKELY) {
    this.fold = fold;
    this.threshold = threshold;
    this.mapped = { keys: new Map(), leaf: false };
    for (const path of mapped) this.add(path);
    this.allow = fold ? allow.map((p) => p.map((s) => (s === null ? null : foldKey(s)))) : allow;
  }

  /**
   * The findings in `record`, in walk order (the first names the dead letter): all of them, so
   * that a caller protecting them in place leaves none in clear (the walk visits every value anyway).
   */
  findings(record: unknown): ObjectFinding[] {
    const out: ObjectFinding[] = [];
    this.walk(record, this.mapped, [], out, undefined, undefined);
    return out;
  }

  /**
   * Where a walk of the record stands among the mapped paths (undefined: nothing mapped below),
   * for a walker of its own (a wire format's): the root, a key's or an element's place, whether a
   * mapped value sits there, and whether an allowed path covers the steps.
   */
  root(): PathTree {
    return this.mapped;
  }

  child(tree: PathTree | undefined, key: string): PathTree | undefined {
    return tree?.keys.get(this.norm(key));
  }

  element(tree: PathTree | undefined): PathTree | undefined {
    return tree?.each;
  }

  isMapped(tree: PathTree | undefined): boolean {
    return tree?.leaf === true;
  }

  private add(path: string): void {
    let node = this.mapped;
    for (const part of path.split('.')) {
      const each = part.endsWith('[]');
      const name = this.norm(each ? part.slice(0, -2) : part);
      let next = node.keys.get(name);
      if (next === undefined) node.keys.set(name, (next = { keys: new Map(), leaf: false }));
      node = next;
      if (each) node = node.each ??= { keys: new Map(), leaf: false };
    }
    node.leaf = true;
  }

  private norm(key: string): string {
    return this.fold ? foldKey(key) : key;
  }

  // a recursive walk: the place and where to write travel with it
  private walk(
    value: unknown,
    tree: PathTree | undefined,
    steps: PlaceStep[],
    out: ObjectFinding[],
    parent: Record<string, unknown> | unknown[] | undefined,
    at: string | number | undefined,
    named?: number,
  ): void {
    if (value === null || value === undefined) return;
    if (tree?.leaf === true) return;
    if (this.allowed(steps)) return;
    if (Array.isArray(value)) {
      value.forEach((v, i) => {
        steps.push(null);
        this.walk(v, tree?.each, steps, out, value, i);
        steps.pop();
      });
      return;
    }
    if (value instanceof Map) {
      for (const [k, v] of value) this.entry(String(k), v, tree, steps, out, undefined);
      return;
    }
    if (typeof value === 'object' && !(value instanceof Uint8Array)) {
      const obj = value as Record<string, unknown>;
      // an Avro map entry (the serde reads a map as {key, value} entries): the key is data, checked
      // as a key is (no name), and names the value as a field name does (`mobile`, `fullName`)
      const entry = isMapEntry(obj);
      for (const k of Object.keys(obj)) this.entry(k, obj[k], tree, steps, out, obj, entry ? (k === 'key' ? 0 : contextOf(obj.key as string)) : undefined);
      return;
    }
    const text = textOf(value);
    if (text === undefined) return;
    // an array element is named by its array's field (`phones` for each of its values)
    const name = (steps.findLast((step) => step !== null) as string | undefined) ?? '';
    const kind =
      named !== undefined
        ? unmappedValueKind(text, name, named, this.threshold)
        : unmappedValueKind(text, name, contextOf(name), this.threshold, () => parentContext(steps));
    if (kind !== undefined) out.push({ path: formatPath(steps), kind, key: false, ...(parent === undefined ? {} : { parent, at: at! }) });
  }

  private entry(
    key: string,
    value: unknown,
    tree: PathTree | undefined,
    steps: PlaceStep[],
    out: ObjectFinding[],
    parent: Record<string, unknown> | undefined,
    named?: number,
  ): void {
    steps.push(key);
    const keyKind = unmappedKeyKind(key, this.threshold);
    if (keyKind !== undefined && !this.allowed(steps)) out.push({ path: formatPath(steps, true), kind: keyKind, key: true });
    this.walk(value, tree?.keys.get(this.norm(key)), steps, out, parent, key, named);
    steps.pop();
  }

  allowed(steps: readonly PlaceStep[]): boolean {
    return this.allow.some(
      (entry) =>
        entry.length <= steps.length &&
        entry.every((s, i) => {
          const step = steps[i]!;
          if (s === null || step === null) return s === step;
          return s === (this.fold ? foldKey(step) : step);
        }),
    );
  }
}

/** the text a leaf holds: a string, a non-negative integer's digits, bytes that are UTF-8 text; undefined for anything else */
function textOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint' || (typeof value === 'number' && Number.isSafeInteger(value))) {
    const text = String(value);
    return text.startsWith('-') ? undefined : text;
  }
  if (value instanceof Uint8Array && value.length >= 5 && value.length <= 254 && isUtf8(value))
    return Buffer.from(value.buffer, value.byteOffset, value.length).toString('utf8');
  return undefined;
}

/** an Avro map's entry as the serde reads it: exactly a string `key` and a `value` */
function isMapEntry(obj: Record<string, unknown>): boolean {
  return typeof obj.key === 'string' && 'value' in obj && Object.keys(obj).length === 2;
}
