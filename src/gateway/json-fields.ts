// The one validating JSON scanner of veil (src/json-bytes, shared with the stream pipelines): it
// reports where paths land as byte spans, so the gateway rewrites only the selected values and
// keeps every other byte.
import { compileExpectation, type JsonPath } from '../json-bytes/paths.ts';
import { isNotJson } from '../json-bytes/errors.ts';
import { EV_MISSING, EV_NO_ARRAY, EV_NOT_SCALAR, EV_SHAPE, leafText, scanJson, type Expectation, type UnmappedVisitor } from '../json-bytes/scan.ts';
import { spliceJson } from '../json-bytes/splice.ts';
import type { Selector } from './selector.ts';
import { GatewayError } from './errors.ts';

/** One selected scalar in a body: which selector reached it, its byte span, and its text. */
export interface LocatedValue {
  selector: number;
  /** the k-th value this selector reached (document order) */
  occurrence: number;
  start: number;
  end: number;
  /** a string's decoded text, or a number's or boolean's text as written */
  value: string;
}

export interface Located {
  values: LocatedValue[];
  /** selectors that met a value of the wrong shape (an object or array where a scalar was selected, and so on) */
  mismatched: number[];
}

/** Compiled once per route: what each selector needs of every value on its way. */
export type CompiledSelectors = Expectation | null;

/**
 * `foldKeys`: keys match case-insensitively (gateway `keys: insensitive`, the default); `quiet`:
 * paths a visitor is not shown (the guard's allow-list).
 */
export function compileSelectors(selectors: readonly Selector[], foldKeys = false, quiet?: readonly JsonPath[]): CompiledSelectors {
  return compileExpectation(
    selectors.map((s) => s.steps),
    { foldKeys, ...(quiet ? { quiet } : {}) },
  );
}

export const bodyNotJson = () => new GatewayError('BODY_NOT_JSON', 'the body is not JSON (UTF-8)');

/**
 * Validates `bytes` as one UTF-8 JSON text and returns the scalars the selectors reach. Absent and
 * null places are skipped: a route's fields are optional. `visitor` (the unmapped guard) sees every
 * value and key no selector reaches, during the same scan. Throws BODY_NOT_JSON.
 */
export function locate(bytes: Buffer, compiled: CompiledSelectors, visitor?: UnmappedVisitor): Located {
  const events: number[] = [];
  try {
    scanJson(bytes, compiled, events, 0, visitor);
  } catch (e) {
    if (isNotJson(e)) throw bodyNotJson();
    throw e;
  }
  const values: LocatedValue[] = [];
  const mismatched = new Set<number>();
  const counts = new Map<number, number>();
  for (let k = 0; k < events.length; k += 4) {
    const m = events[k]!;
    const kind = events[k + 1]!;
    const start = events[k + 2]!;
    const end = events[k + 3]!;
    if (kind === EV_MISSING) continue;
    if (kind === EV_SHAPE || kind === EV_NO_ARRAY || kind === EV_NOT_SCALAR) {
      mismatched.add(m);
      continue;
    }
    const occurrence = counts.get(m) ?? 0;
    counts.set(m, occurrence + 1);
    values.push({ selector: m, occurrence, start, end, value: leafText(bytes, kind, start, end) });
  }
  return { values, mismatched: [...mismatched].sort((a, b) => a - b) };
}

/** Replaces each span by a JSON string of its new text; every other byte stays as it was. */
export function spliceStrings(bytes: Buffer, edits: readonly { start: number; end: number; text: string }[]): Buffer {
  // two selectors reaching one value are refused at configuration load; spliceJson guards the invariant
  return spliceJson(
    bytes,
    edits.map((e) => ({ start: e.start, end: e.end, json: JSON.stringify(e.text) })),
  );
}
