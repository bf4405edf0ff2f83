import { VeilError } from '../engine/index.ts';
// The one validating JSON scanner of veil (the stream pipelines' too): it reports where paths land
// as byte spans, so the gateway rewrites only the selected values and keeps every other byte.
import { EV_MISSING, EV_NO_ARRAY, EV_NOT_SCALAR, EV_RAW, EV_SHAPE, EV_STRING, hasBackslash, scanJson, type Expectation, type KeyGroup } from '../stream/serde/json-scan.ts';
import type { Selector } from './selector.ts';

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

interface Need {
  m: number;
  selector: Selector;
  /** the step to apply to this value; steps.length: this value is the selected one */
  i: number;
}

export function compileSelectors(selectors: readonly Selector[]): CompiledSelectors {
  if (selectors.length === 0) return null;
  return merge(selectors.map((selector, m) => ({ m, selector, i: 0 })));
}

function merge(needs: readonly Need[]): Expectation {
  const groups = new Map<string, Need[]>();
  const objectMs: number[] = [];
  const arrayMs: number[] = [];
  const leafMs: number[] = [];
  const elements: Need[] = [];
  for (const n of needs) {
    const step = n.selector.steps[n.i];
    if (step === undefined) leafMs.push(n.m);
    else if (step.kind === 'each') {
      arrayMs.push(n.m);
      elements.push({ ...n, i: n.i + 1 });
    } else {
      objectMs.push(n.m);
      let group = groups.get(step.name);
      if (group === undefined) groups.set(step.name, (group = []));
      group.push({ ...n, i: n.i + 1 });
    }
  }
  const keys: KeyGroup[] = [...groups].map(([name, g]) => ({ name, bytes: Buffer.from(name, 'utf8'), ms: g.map((n) => n.m), value: merge(g) }));
  return { keys, objectMs, arrayMs, leafMs, elements: elements.length === 0 ? null : merge(elements), allMs: needs.map((n) => n.m) };
}

export const bodyNotJson = () => new VeilError('BODY_NOT_JSON', 'the body is not JSON (UTF-8)');

/**
 * Validates `bytes` as one UTF-8 JSON text and returns the scalars the selectors reach. Absent and
 * null places are skipped: a route's fields are optional. Throws BODY_NOT_JSON.
 */
export function locate(bytes: Buffer, compiled: CompiledSelectors): Located {
  const events: number[] = [];
  try {
    scanJson(bytes, compiled, events);
  } catch {
    throw bodyNotJson();
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
    values.push({ selector: m, occurrence, start, end, value: textOf(bytes, kind, start, end) });
  }
  return { values, mismatched: [...mismatched].sort((a, b) => a - b) };
}

function textOf(bytes: Buffer, kind: number, start: number, end: number): string {
  if (kind === EV_RAW) return bytes.toString('latin1', start, end);
  if (kind !== EV_STRING) throw new Error(`unexpected scan event ${kind}`);
  if (hasBackslash(bytes, start + 1, end - 1)) return JSON.parse(bytes.toString('utf8', start, end)) as string;
  return bytes.toString('utf8', start + 1, end - 1);
}

/** Replaces each span by a JSON string of its new text; every other byte stays as it was. */
export function spliceStrings(bytes: Buffer, edits: readonly { start: number; end: number; text: string }[]): Buffer {
  if (edits.length === 0) return bytes;
  const sorted = [...edits].sort((a, b) => a.start - b.start);
  const parts: Buffer[] = [];
  let prev = 0;
  for (const e of sorted) {
    // two selectors reaching one value are refused at configuration load; this guards the invariant
    if (e.start < prev) throw new Error('two selectors reach the same JSON value');
    parts.push(bytes.subarray(prev, e.start), Buffer.from(JSON.stringify(e.text), 'utf8'));
    prev = e.end;
  }
  parts.push(bytes.subarray(prev));
  return Buffer.concat(parts);
}
