import type { Expectation, KeyGroup } from './scan.ts';

/**
 * A path into a JSON document: object keys and array fan-out (`[*]`), e.g. `cards[*].number` is
 * [key cards, each, key number]. The stream pipelines' record paths and the gateway's selectors
 * are both written down to this.
 */
export type JsonPathStep = { readonly kind: 'key'; readonly name: string } | { readonly kind: 'each' };
export type JsonPath = readonly JsonPathStep[];

interface Need {
  /** the path's index: the number its scan events carry */
  m: number;
  path: JsonPath;
  /** the step to apply to this value; path.length: this value is the selected one */
  i: number;
}

/**
 * The scanner's expectation tree for `paths`, path m reported as m. Compile once per path list:
 * scanning then allocates nothing per token. Null for no paths (the scan only validates).
 */
export function compileExpectation(paths: readonly JsonPath[]): Expectation | null {
  if (paths.length === 0) return null;
  if (paths.some((p) => p.length === 0)) throw new Error('a JSON path has no steps');
  return merge(paths.map((path, m) => ({ m, path, i: 0 })));
}

/** Merges what several paths need of one value; keys looked up by several paths are matched once. */
function merge(needs: readonly Need[]): Expectation {
  const groups = new Map<string, Need[]>();
  const objectMs: number[] = [];
  const arrayMs: number[] = [];
  const leafMs: number[] = [];
  const elements: Need[] = [];
  for (const n of needs) {
    const step = n.path[n.i];
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
