import { ValueError } from '../../engine/index.ts';
import type { Mapping } from '../protect-record.ts';
import type { RecordPath } from '../record-path.ts';
import { StreamError } from '../stream-error.ts';
import { EV_MISSING, EV_NO_ARRAY, EV_NOT_SCALAR, EV_RAW, EV_SHAPE, hasBackslash, scanJson, type Expectation } from './json-scan.ts';

interface Edit {
  start: number;
  end: number;
  text: string;
}

interface Plan {
  paths: readonly RecordPath[];
  root: Expectation | null;
}

// Pipelines pass the same mapping list for every record; compiling it once keeps key bytes and
// expectation trees off the hot path.
const plans = new WeakMap<readonly Mapping[], Plan>();

function planFor(maps: readonly Mapping[]): Expectation | null {
  if (maps.length === 0) return null;
  const cached = plans.get(maps);
  if (cached !== undefined && samePaths(cached.paths, maps)) return cached.root;
  const paths = maps.map((m) => m.compiled);
  const root = compileExpectation(paths);
  plans.set(maps, { paths, root });
  return root;
}

const OBJECT_NEED = 0;
const ARRAY_NEED = 1;
const LEAF_NEED = 2;

/** what mapping m needs of a value: the object holding step i, the array of `[]` step i, or the leaf */
interface Need {
  m: number;
  path: RecordPath;
  i: number;
  kind: number;
}

/** The expectation of the root: an object holding each path's first step. */
function compileExpectation(paths: readonly RecordPath[]): Expectation {
  if (paths.some((p) => p.length === 0)) throw new Error('a mapped path has no steps');
  return merge(paths.map((path, m) => ({ m, path, i: 0, kind: OBJECT_NEED })));
}

/** Merges what several mappings need of one value; keys looked up by several mappings are matched once. */
function merge(needs: readonly Need[]): Expectation {
  const groups = new Map<string, { ms: number[]; needs: Need[] }>();
  const objectMs: number[] = [];
  const arrayMs: number[] = [];
  const leafMs: number[] = [];
  const elements: Need[] = [];
  const after = (n: Need): Need => (n.i === n.path.length - 1 ? { ...n, kind: LEAF_NEED } : { ...n, i: n.i + 1, kind: OBJECT_NEED });
  for (const n of needs) {
    if (n.kind === LEAF_NEED) leafMs.push(n.m);
    else if (n.kind === ARRAY_NEED) {
      arrayMs.push(n.m);
      elements.push(after(n));
    } else {
      objectMs.push(n.m);
      const step = n.path[n.i]!;
      let group = groups.get(step.name);
      if (group === undefined) groups.set(step.name, (group = { ms: [], needs: [] }));
      group.ms.push(n.m);
      group.needs.push(step.each ? { ...n, kind: ARRAY_NEED } : after(n));
    }
  }
  return {
    keys: [...groups].map(([name, g]) => ({ name, bytes: Buffer.from(name, 'utf8'), ms: g.ms, value: merge(g.needs) })),
    objectMs, arrayMs, leafMs,
    elements: elements.length === 0 ? null : merge(elements),
    allMs: needs.map((n) => n.m),
  };
}

/** guards against a caller that reuses one array and changes it */
function samePaths(paths: readonly RecordPath[], maps: readonly Mapping[]): boolean {
  if (paths.length !== maps.length) return false;
  for (let i = 0; i < paths.length; i++) if (paths[i] !== maps[i]!.compiled) return false;
  return true;
}

/**
 * Protects every mapped field of a UTF-8 JSON document by replacing only the bytes of the mapped
 * values: every byte outside them (numbers beyond double precision, `1.0`, `-0.0`, key order,
 * whitespace, escapes, duplicate keys) is returned as it came. Behaves like protectRecord on the
 * parsed document, but fails closed on duplicate keys: each occurrence of a mapped key is protected.
 * Numbers and booleans are transformed as their text in the document; the result is a JSON string.
 */
export function protectJsonBytes(bytes: Buffer, maps: readonly Mapping[], missing: 'pass' | 'dead-letter'): Buffer {
  const events: number[] = [];
  scanJson(bytes, planFor(maps), events);
  if (events.length === 0) return bytes;
  const edits: Edit[] = [];
  // Mapping by mapping, each in document order: the order protectRecord visits locations, so the
  // first failure (and which transformers run before it) is the same.
  for (let m = 0; m < maps.length; m++) {
    const map = maps[m]!;
    for (let k = 0; k < events.length; k += 4) {
      if (events[k] !== m) continue;
      const kind = events[k + 1]!;
      const start = events[k + 2]!;
      const end = events[k + 3]!;
      if (kind === EV_MISSING) {
        if (missing === 'dead-letter') throw new StreamError('FIELD_MISSING', `mapped field ${map.path} is absent or null`);
        continue;
      }
      if (kind === EV_SHAPE) throw new StreamError('RECORD_MALFORMED', `the record's shape does not match mapped path ${map.path}`);
      if (kind === EV_NO_ARRAY) throw new StreamError('RECORD_MALFORMED', `the record's shape does not match mapped path ${map.path} (no array)`);
      if (kind === EV_NOT_SCALAR) throw new StreamError('RECORD_MALFORMED', `mapped field ${map.path} is not a scalar`);
      edits.push({ start, end, text: JSON.stringify(transform(map, leafValue(bytes, kind, start, end))) });
    }
  }
  return edits.length === 0 ? bytes : splice(bytes, edits);
}

function leafValue(bytes: Buffer, kind: number, start: number, end: number): string {
  // numbers and booleans: the text as written, so 1.0 stays "1.0" and 2^63-1 keeps its digits
  if (kind === EV_RAW) return bytes.toString('latin1', start, end);
  if (hasBackslash(bytes, start + 1, end - 1)) return JSON.parse(bytes.toString('utf8', start, end)) as string;
  return bytes.toString('utf8', start + 1, end - 1);
}

function transform(map: Mapping, value: string): string {
  try {
    return map.transform(value);
  } catch (e) {
    if (e instanceof ValueError) throw new StreamError(e.code, `mapped field ${map.path}: value ${e.message}`);
    throw e;
  }
}

function splice(bytes: Buffer, edits: Edit[]): Buffer {
  if (edits.length > 1) edits.sort((a, b) => a.start - b.start);
  const sizes: number[] = [];
  let size = bytes.length;
  let prev = 0;
  for (const e of edits) {
    // leaves are scalars, so two edits overlap only when two mappings reach the same value
    if (e.start < prev) throw new Error('two mapped paths reach the same JSON value: the pipeline maps one field twice');
    const n = Buffer.byteLength(e.text, 'utf8');
    sizes.push(n);
    size += n - (e.end - e.start);
    prev = e.end;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  prev = 0;
  edits.forEach((e, i) => {
    at += bytes.copy(out, at, prev, e.start);
    at += out.write(e.text, at, sizes[i]!, 'utf8');
    prev = e.end;
  });
  bytes.copy(out, at, prev);
  return out;
}
