import { ValueError, type Chain } from '../../../engine/index.ts';
import { allowedPath, JsonGuard, quietPath } from '../../../drift-guard/index.ts';
import type { Mapping } from '../field-mappings.ts';
import type { RecordPath } from '../record-path.ts';
import { StreamError } from '../../stream-error.ts';
import { compileExpectation, type JsonPath, type JsonPathStep } from '../../../json-bytes/paths.ts';
import { EV_MISSING, EV_NO_ARRAY, EV_NOT_SCALAR, EV_RAW, EV_SHAPE, EV_STRING, leafText, scanJson, type Expectation } from '../../../json-bytes/scan.ts';
import { isNotJson, JsonBytesFault } from '../../../json-bytes/errors.ts';
import { spliceJson, type Splice } from '../../../json-bytes/splice.ts';
import type { RecordProtection } from '../serde.ts';

interface Plan {
  maps: readonly Mapping[];
  paths: readonly RecordPath[];
  root: Expectation | null;
  /** the unmapped guard's visitor, reused record after record */
  guard?: JsonGuard;
  /** action protect: each protected kind's chain, numbered after the mappings */
  kinds: string[];
  chains: Chain[];
  /** a number found may become a protected string (no schema fixes its type) */
  retypes: boolean;
  /** veil.protected.fields of each combination of mappings met, by bit mask */
  fieldLists: Map<number, string>;
}

// Pipelines pass the same protection for every record; compiling it once keeps key bytes and
// expectation trees off the hot path.
const plans = new WeakMap<RecordProtection, Plan>();

function planFor(protection: RecordProtection): Plan {
  const { maps } = protection;
  const cached = plans.get(protection);
  if (cached !== undefined && cached.maps === maps && samePaths(cached.paths, maps)) return cached;
  const paths = maps.map((m) => m.compiled);
  const g = protection.guard;
  // the guard's allow-list is quiet to the scan: nothing under an allowed path is shown to the guard
  const quiet = g?.allow.map((path) => quietPath(allowedPath(path)));
  const root = compileExpectation(paths.map(jsonPathOf), { foldKeys: protection.foldKeys === true, ...(quiet ? { quiet } : {}) });
  const plan: Plan = {
    maps,
    paths,
    root,
    kinds: [...(g?.protect.keys() ?? [])],
    chains: [...(g?.protect.values() ?? [])],
    retypes: g?.retypes === true,
    fieldLists: new Map(),
  };
  if (g !== undefined) plan.guard = new JsonGuard(g.allow.map(allowedPath), protection.foldKeys === true, undefined, g.threshold);
  plans.set(protection, plan);
  return plan;
}

/** `cards[].number` as a neutral JSON path: [key cards, each, key number]. */
export function jsonPathOf(path: RecordPath): JsonPath {
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
export function protectJsonBytes(bytes: Buffer, maps: readonly Mapping[] | RecordProtection, missing: 'pass' | 'dead-letter' = 'pass'): Buffer {
  const protection = 'maps' in maps ? maps : { maps, missing };
  const [out] = protectJsonValues([bytes], protection);
  if (out instanceof StreamError) throw out;
  return out!;
}

/** A record's mapped leaves in protectRecord's order, and the finding that stopped the walk, if any. */
interface RecordPlan {
  bytes: Buffer;
  /** per leaf: mapping (or maps.length + the guard's kind index), span start, span end, index of its text in that batch */
  leaves: number[];
  /** the guard's protected paths, in document order (action protect) */
  guarded?: string[];
  stop?: StreamError;
}

/**
 * protectJsonBytes over many values: the mapped values of all of them go to each mapping's chain
 * as one batch (Chain.many), then each document is spliced. Each value's clean bytes, or the
 * StreamError it is dead-lettered with — the same error protectJsonBytes throws for it alone.
 * Anything else (a key that cannot be loaded) throws for the whole batch. `fields[i]`, when
 * given, receives the paths protected in value i (comma-separated).
 */
export function protectJsonValues(values: readonly Buffer[], protection: RecordProtection, fields?: (string | undefined)[]): (Buffer | StreamError)[] {
  const plan = planFor(protection);
  const chains = [...plan.maps.map((m) => m.transform), ...plan.chains];
  const texts: string[][] = chains.map(() => []);
  const plans = values.map((bytes) => planRecord(bytes, plan, protection.missing, texts));
  const results = chains.map((chain, m) => (texts[m]!.length ? chain.many(texts[m]!) : []));
  return plans.map((p, i) => {
    if (p instanceof StreamError) return p;
    const out = finish(p, plan.maps, results);
    if (fields !== undefined && !(out instanceof StreamError)) fields[i] = protectedPaths(p, plan);
    return out;
  });
}

// planRecord is synchronous and copies what it keeps out of the events
const scanEvents: number[] = [];

/**
 * Mapping by mapping, each in document order: the order protectRecord visits locations, so the
 * first failure (and which values are transformed before it) is the same. The walk stops at the
 * first finding that fails the record whatever its values (absent, wrong shape). Then the
 * unmapped guard's findings, if the pipeline has the guard.
 */
function planRecord(bytes: Buffer, plan: Plan, missing: 'pass' | 'dead-letter', texts: string[][]): RecordPlan | StreamError {
  const { maps, root, guard } = plan;
  // one list for every record, overwritten: emptying an array drops its storage, refilling regrows it
  const events = scanEvents;
  let written: number;
  guard?.begin();
  try {
    written = scanJson(bytes, root, events, 0, guard);
  } catch (e) {
    if (isNotJson(e)) return new StreamError('RECORD_MALFORMED', 'the value is not JSON');
    throw e;
  }
  const out: RecordPlan = { bytes, leaves: [] };
  for (let m = 0; m < maps.length && written > 0; m++) {
    const path = maps[m]!.path;
    for (let k = 0; k < written; k += 4) {
      if (events[k] !== m) continue;
      const kind = events[k + 1]!;
      const start = events[k + 2]!;
      const end = events[k + 3]!;
      if (kind === EV_MISSING) {
        if (missing === 'pass') continue;
        out.stop = new StreamError('FIELD_MISSING', `mapped field ${path} is absent or null`, { path });
      } else if (kind === EV_SHAPE) out.stop = new StreamError('RECORD_MALFORMED', `the record's shape does not match mapped path ${path}`, { path });
      else if (kind === EV_NO_ARRAY)
        out.stop = new StreamError('RECORD_MALFORMED', `the record's shape does not match mapped path ${path} (no array)`, { path });
      else if (kind === EV_NOT_SCALAR) out.stop = new StreamError('RECORD_MALFORMED', `mapped field ${path} is not a scalar`, { path });
      else out.leaves.push(m, start, end, texts[m]!.push(leafText(bytes, kind, start, end)) - 1);
      if (out.stop) return out;
    }
  }
  if (guard !== undefined && guard.findings.length > 0) planGuarded(out, plan, texts);
  return out;
}

/** The guard's findings: protected where the pipeline protects their kind, else the record stops (the first names the dead letter). */
function planGuarded(out: RecordPlan, plan: Plan, texts: string[][]): void {
  const guard = plan.guard!;
  if (guard.truncated) {
    // more findings than the guard collects: protecting the first ones would pass the rest in clear
    const f = guard.findings[0]!;
    out.stop = new StreamError('UNMAPPED_PERSONAL_DATA', `unmapped path ${f.path} and more than ${guard.findings.length - 1} others hold personal data`, {
      path: f.path,
      kind: f.kind,
    });
    return;
  }
  for (const f of guard.findings) {
    const number = out.bytes[f.start] !== 0x22;
    const j = f.key || (number && !plan.retypes) ? -1 : plan.kinds.indexOf(f.kind);
    if (j < 0) {
      out.stop = new StreamError(
        'UNMAPPED_PERSONAL_DATA',
        `unmapped path ${f.path} holds ${f.kind === 'email' ? 'an' : 'a'} ${f.kind}${f.key ? ' as an object key' : ''}`,
        { path: f.path, kind: f.kind },
      );
      return;
    }
    const m = plan.maps.length + j;
    out.leaves.push(m, f.start, f.end, texts[m]!.push(leafText(out.bytes, number ? EV_RAW : EV_STRING, f.start, f.end)) - 1);
    (out.guarded ??= []).push(f.path);
  }
}

/** the paths a clean value had protected: mapped paths in mapping order, then the guard's */
function protectedPaths(p: RecordPlan, plan: Plan): string {
  const maps = plan.maps;
  // which mappings reached a value, as bits (a pipeline of more than 30 mappings skips the cache):
  // the list of each combination is built once
  let mask = maps.length <= 30 ? 0 : -1;
  if (mask === 0) for (let k = 0; k < p.leaves.length; k += 4) if (p.leaves[k]! < maps.length) mask |= 1 << p.leaves[k]!;
  let mapped = mask < 0 ? undefined : plan.fieldLists.get(mask);
  if (mapped === undefined) {
    const met = new Set<number>();
    for (let k = 0; k < p.leaves.length; k += 4) met.add(p.leaves[k]!);
    mapped = maps
      .filter((_, m) => met.has(m))
      .map((m) => m.path)
      .join(',');
    if (mask >= 0 && plan.fieldLists.size < 1024) plan.fieldLists.set(mask, mapped);
  }
  if (p.guarded === undefined) return mapped;
  const paths = mapped === '' ? [] : mapped.split(',');
  for (const g of p.guarded) if (!paths.includes(g)) paths.push(g);
  return paths.join(',');
}

function finish(plan: RecordPlan, maps: readonly Mapping[], results: readonly (string | ValueError)[][]): Buffer | StreamError {
  const edits: Splice[] = [];
  const leaves = plan.leaves;
  // the guard's leaves come after the mapped ones, in the order of `guarded`
  let guardedLeaf = 0;
  for (let k = 0; k < leaves.length; k += 4) {
    const m = leaves[k]!;
    const out = results[m]![leaves[k + 3]!]!;
    const path = m < maps.length ? maps[m]!.path : plan.guarded![guardedLeaf++]!;
    if (out instanceof ValueError) {
      return new StreamError(out.code, `${m < maps.length ? 'mapped field' : 'unmapped path'} ${path}: value ${out.message}`, { path });
    }
    edits.push({ start: leaves[k + 1]!, end: leaves[k + 2]!, json: JSON.stringify(out) });
  }
  if (plan.stop) return plan.stop;
  if (edits.length === 0) return plan.bytes;
  try {
    return spliceJson(plan.bytes, edits);
  } catch (e) {
    if (e instanceof JsonBytesFault && e.code === 'SPLICE_OVERLAP')
      throw new Error('two mapped paths reach the same JSON value: the pipeline maps one field twice', { cause: e });
    throw e;
  }
}
