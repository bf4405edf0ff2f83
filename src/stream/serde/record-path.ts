import { StreamError } from '../stream-error.ts';

/** A compiled record path: `cards[].number` → [{name: cards, each: true}, {name: number}]. */
export type RecordPath = readonly { name: string; each: boolean }[];

export function compilePath(path: string): RecordPath {
  return path.split('.').map((part) => (part.endsWith('[]') ? { name: part.slice(0, -2), each: true } : { name: part, each: false }));
}

/**
 * Calls `visit` for every location the path reaches in `root` (several through arrays) and
 * writes back what it returns. An absent or null container or leaf is one location whose value
 * is undefined/null (the visitor decides: pass or refuse). A shape that contradicts the path — a
 * scalar where a record is expected, a non-array under `[]` — is RECORD_MALFORMED: fail closed,
 * since a mapped value could otherwise slip through unprotected.
 */
export function rewriteAt(root: unknown, path: RecordPath, text: string, visit: (value: unknown) => unknown): void {
  walk(root, path, 0, text, visit);
}

function walk(node: unknown, path: RecordPath, i: number, text: string, visit: (value: unknown) => unknown): void {
  if (node === null || node === undefined) {
    visit(node);
    return;
  }
  if (typeof node !== 'object' || Array.isArray(node)) throw new StreamError('RECORD_MALFORMED', `the record's shape does not match mapped path ${text}`);
  const step = path[i]!;
  const obj = node as Record<string, unknown>;
  const last = i === path.length - 1;
  // own properties only: a path named `constructor` must not read a prototype member
  const child = Object.hasOwn(obj, step.name) ? obj[step.name] : undefined;
  if (step.each) {
    if (child === null || child === undefined) {
      visit(child);
      return;
    }
    if (!Array.isArray(child)) throw new StreamError('RECORD_MALFORMED', `the record's shape does not match mapped path ${text} (no array)`);
    child.forEach((element, j) => {
      if (last) child[j] = visit(element);
      else walk(element, path, i + 1, text, visit);
    });
    return;
  }
  if (last) {
    const replacement = visit(child);
    if (child !== undefined) obj[step.name] = replacement;
    return;
  }
  walk(child, path, i + 1, text, visit);
}
