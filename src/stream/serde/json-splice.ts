import { ValueError } from '../../engine/index.ts';
import type { Mapping } from '../protect-record.ts';
import type { RecordPath } from '../record-path.ts';
import { StreamError } from '../stream-error.ts';
import { compileExpectation, type JsonPath, type JsonPathStep } from '../../json-bytes/paths.ts';
import { EV_MISSING, EV_NO_ARRAY, EV_NOT_SCALAR, EV_SHAPE, JsonSyntaxError, leafText, scanJson, type Expectation } from '../../json-bytes/scan.ts';
import { OverlappingSpliceError, spliceJson, type Splice } from '../../json-bytes/splice.ts';

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
  const root = compileExpectation(paths.map(jsonPathOf));
  plans.set(maps, { paths, root });
  return root;
}

/** `cards[].number` as a neutral JSON path: [key cards, each, key number]. */
function jsonPathOf(path: RecordPath): JsonPath {
  return path.flatMap((step): JsonPathStep[] => (step.each ? [{ kind: 'key', name: step.name }, { kind: 'each' }] : [{ kind: 'key', name: step.name }]));
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
  try {
    scanJson(bytes, planFor(maps), events);
  } catch (e) {
    if (e instanceof JsonSyntaxError) throw new StreamError('RECORD_MALFORMED', 'the value is not JSON');
    throw e;
  }
  if (events.length === 0) return bytes;
  const edits: Splice[] = [];
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
      edits.push({ start, end, json: JSON.stringify(transform(map, leafText(bytes, kind, start, end))) });
    }
  }
  if (edits.length === 0) return bytes;
  try {
    return spliceJson(bytes, edits);
  } catch (e) {
    if (e instanceof OverlappingSpliceError) throw new Error('two mapped paths reach the same JSON value: the pipeline maps one field twice', { cause: e });
    throw e;
  }
}

function transform(map: Mapping, value: string): string {
  try {
    return map.transform(value);
  } catch (e) {
    if (e instanceof ValueError) throw new StreamError(e.code, `mapped field ${map.path}: value ${e.message}`);
    throw e;
  }
}
