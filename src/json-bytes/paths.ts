import type { Expectation, KeyGroup } from './scan.ts';

/**
 * A path into a JSON document: object keys and array fan-out (`[*]`), e.g. `cards[*].number` is
 * [key cards, each, key number]. The stream pipelines' record paths and the gateway's selectors
 * are both written down to this.
 */
export type JsonPathStep = { readonly kind: 'key'; readonly name: string } | { readonly kind: 'each' };
export type JsonPath = readonly JsonPathStep[];

interface Need {
  /** the path's index: the number its scan events carry; QUIET for a quiet path, which has no events */
  m: number;
  path: JsonPath;
  /** the step to apply to this value; path.length: this value is the selected one */
  i: number;
}

export interface CompileOptions {
  /**
   * Match object keys case-insensitively (foldKey): `Email` and `EMAIL` reach the value a path
   * names `email`, as ASP.NET Core or Go's encoding/json bind them. Default: exact.
   */
  foldKeys?: boolean;
  /**
   * Paths whose values (and everything under them) a visitor is not shown: a guard's allow-list,
   * matched by the scan as mapped paths are (keys compared on their bytes, folded alike). They
   * report no events.
   */
  quiet?: readonly JsonPath[];
}

const QUIET = -1;

/**
 * The scanner's expectation tree for `paths`, path m reported as m. Compile once per path list:
 * scanning then allocates nothing per token. Null for no paths (the scan only validates).
 */
export function compileExpectation(paths: readonly JsonPath[], options: CompileOptions = {}): Expectation | null {
  const quiet = options.quiet ?? [];
  if (paths.length === 0 && quiet.length === 0) return null;
  if ([...paths, ...quiet].some((p) => p.length === 0)) throw new Error('a JSON path has no steps');
  return merge([...paths.map((path, m) => ({ m, path, i: 0 })), ...quiet.map((path) => ({ m: QUIET, path, i: 0 }))], options.foldKeys === true);
}

/**
 * A key's case-folded form: each code point upper-cased then lower-cased where that keeps it one
 * code point, so `ſ` (U+017F) folds like `s` and `K` (U+212A, Kelvin) like `k` — the simple case
 * folding Go's encoding/json matches keys with — while `ß` stays `ß`.
 */
export function foldKey(name: string): string {
  if (/^[\x00-\x7f]*$/.test(name)) return name.toLowerCase();
  let out = '';
  for (const c of name) {
    const upper = c.toUpperCase();
    const u = [...upper].length === 1 ? upper : c;
    const lower = u.toLowerCase();
    out += [...lower].length === 1 ? lower : u;
  }
  return out;
}

/** Merges what several paths need of one value; keys looked up by several paths are matched once. */
function merge(needs: readonly Need[], fold: boolean): Expectation {
  const groups = new Map<string, Need[]>();
  const objectMs: number[] = [];
  const arrayMs: number[] = [];
  const leafMs: number[] = [];
  const elements: Need[] = [];
  let quiet = false;
  for (const n of needs) {
    const step = n.path[n.i];
    const mapped = n.m !== QUIET;
    if (step === undefined) {
      if (mapped) leafMs.push(n.m);
      else quiet = true;
    } else if (step.kind === 'each') {
      if (mapped) arrayMs.push(n.m);
      elements.push({ ...n, i: n.i + 1 });
    } else {
      if (mapped) objectMs.push(n.m);
      const name = fold ? foldKey(step.name) : step.name;
      let group = groups.get(name);
      if (group === undefined) groups.set(name, (group = []));
      group.push({ ...n, i: n.i + 1 });
    }
  }
  const mappedMs = (ns: readonly Need[]) => ns.filter((n) => n.m !== QUIET).map((n) => n.m);
  const keys: KeyGroup[] = [...groups].map(([name, g]) => ({
    name,
    bytes: Buffer.from(name, 'utf8'),
    ms: mappedMs(g),
    value: merge(g, fold),
    ...(fold ? { folded: true } : {}),
  }));
  return {
    keys,
    objectMs,
    arrayMs,
    leafMs,
    elements: elements.length === 0 ? null : merge(elements, fold),
    allMs: mappedMs(needs),
    ...(quiet ? { quiet } : {}),
  };
}
