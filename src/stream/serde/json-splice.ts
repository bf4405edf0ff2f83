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
  const [out] = protectJsonValues([bytes], maps, missing);
  if (out instanceof StreamError) throw out;
  return out!;
}

/** A record's mapped leaves in protectRecord's order, and the finding that stopped the walk, if any. */
interface RecordPlan {
  bytes: Buffer;
  /** per leaf: mapping, span start, span end, index of its text in that mapping's batch */
  leaves: number[];
  stop?: StreamError;
}

/**
 * protectJsonBytes over many values: the mapped values of all of them go to each mapping's chain
 * as one batch (Chain.many), then each document is spliced. Each value's clean bytes, or the
 * StreamError it is dead-lettered with — the same error protectJsonBytes throws for it alone.
 * Anything else (a key that cannot be loaded) throws for the whole batch.
 */
export function protectJsonValues(values: readonly Buffer[], maps: readonly Mapping[], missing: 'pass' | 'dead-letter'): (Buffer | StreamError)[] {
  const root = planFor(maps);
  const texts: string[][] = maps.map(() => []);
  const plans = values.map((bytes) => planRecord(bytes, root, maps, missing, texts));
  const results = maps.map((map, m) => (texts[m]!.length ? map.transform.many(texts[m]!) : []));
  return plans.map((plan) => (plan instanceof StreamError ? plan : finish(plan, maps, results)));
}

// planRecord is synchronous and copies what it keeps out of the events
const scanEvents: number[] = [];

/**
 * Mapping by mapping, each in document order: the order protectRecord visits locations, so the
 * first failure (and which values are transformed before it) is the same. The walk stops at the
 * first finding that fails the record whatever its values (absent, wrong shape).
 */
function planRecord(bytes: Buffer, root: Expectation | null, maps: readonly Mapping[], missing: 'pass' | 'dead-letter', texts: string[][]): RecordPlan | StreamError {
  // one list for every record, overwritten: emptying an array drops its storage, refilling regrows it
  const events = scanEvents;
  let written: number;
  try {
    written = scanJson(bytes, root, events);
  } catch (e) {
    if (e instanceof JsonSyntaxError) return new StreamError('RECORD_MALFORMED', 'the value is not JSON');
    throw e;
  }
  const plan: RecordPlan = { bytes, leaves: [] };
  for (let m = 0; m < maps.length && written > 0; m++) {
    const path = maps[m]!.path;
    for (let k = 0; k < written; k += 4) {
      if (events[k] !== m) continue;
      const kind = events[k + 1]!;
      const start = events[k + 2]!;
      const end = events[k + 3]!;
      if (kind === EV_MISSING) {
        if (missing === 'pass') continue;
        plan.stop = new StreamError('FIELD_MISSING', `mapped field ${path} is absent or null`);
      } else if (kind === EV_SHAPE) plan.stop = new StreamError('RECORD_MALFORMED', `the record's shape does not match mapped path ${path}`);
      else if (kind === EV_NO_ARRAY) plan.stop = new StreamError('RECORD_MALFORMED', `the record's shape does not match mapped path ${path} (no array)`);
      else if (kind === EV_NOT_SCALAR) plan.stop = new StreamError('RECORD_MALFORMED', `mapped field ${path} is not a scalar`);
      else plan.leaves.push(m, start, end, texts[m]!.push(leafText(bytes, kind, start, end)) - 1);
      if (plan.stop) return plan;
    }
  }
  return plan;
}

function finish(plan: RecordPlan, maps: readonly Mapping[], results: readonly (string | ValueError)[][]): Buffer | StreamError {
  const edits: Splice[] = [];
  const leaves = plan.leaves;
  for (let k = 0; k < leaves.length; k += 4) {
    const m = leaves[k]!;
    const out = results[m]![leaves[k + 3]!]!;
    if (out instanceof ValueError) return new StreamError(out.code, `mapped field ${maps[m]!.path}: value ${out.message}`);
    edits.push({ start: leaves[k + 1]!, end: leaves[k + 2]!, json: JSON.stringify(out) });
  }
  if (plan.stop) return plan.stop;
  if (edits.length === 0) return plan.bytes;
  try {
    return spliceJson(plan.bytes, edits);
  } catch (e) {
    if (e instanceof OverlappingSpliceError) throw new Error('two mapped paths reach the same JSON value: the pipeline maps one field twice', { cause: e });
    throw e;
  }
}
