import { parse } from 'yaml';

export type DiffLine = { op: ' ' | '+' | '-'; text: string };

/** Above this many cells the middle is shown as removed then added, rather than computed. */
const MAX_DIFF_CELLS = 1_000_000;

/**
 * A line diff (longest common subsequence) of two texts. The common head and tail are taken off
 * first; a middle too large to compare (a draft may hold up to 256 KiB) is shown as replaced, so
 * a diff costs at most MAX_DIFF_CELLS steps.
 */
export function lineDiff(before: string, after: string): DiffLine[] {
  const a = before.split('\n');
  const b = after.split('\n');
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const same = (lines: string[]) => lines.map((text): DiffLine => ({ op: ' ', text }));
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  const middle =
    (midA.length + 1) * (midB.length + 1) > MAX_DIFF_CELLS
      ? [...midA.map((text): DiffLine => ({ op: '-', text })), ...midB.map((text): DiffLine => ({ op: '+', text }))]
      : lcsDiff(midA, midB);
  return [...same(a.slice(0, head)), ...middle, ...same(a.slice(a.length - tail))];
}

function lcsDiff(a: string[], b: string[]): DiffLine[] {
  const n = a.length;
  const m = b.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ op: ' ', text: a[i]! });
      i++;
      j++;
    } else if (lcs[i + 1]![j]! >= lcs[i]![j + 1]!) out.push({ op: '-', text: a[i++]! });
    else out.push({ op: '+', text: b[j++]! });
  }
  while (i < n) out.push({ op: '-', text: a[i++]! });
  while (j < m) out.push({ op: '+', text: b[j++]! });
  return out;
}

type Doc = {
  keys?: Record<string, { type?: string; id?: string; version?: number }>;
  sequences?: Record<string, { steps?: { type?: string; key?: string }[] }>;
  classes?: Record<string, { properties?: Record<string, { protect?: string; unprotect?: string }> }>;
};

const IRREVERSIBLE = new Set(['hmac-sha256', 'mask', 'redact']);

function parsed(text: string): Doc {
  try {
    const doc = parse(text) as unknown;
    return doc && typeof doc === 'object' ? (doc as Doc) : {};
  } catch {
    return {};
  }
}

const own = <T>(record: Record<string, T> | undefined, key: string): T | undefined => (record && Object.hasOwn(record, key) ? record[key] : undefined);

/**
 * What a change would make unreadable: values already protected by a reversible property can be
 * unprotected only with the same steps and the same keys. Warns when such a property's sequence
 * (its name or its steps) or one of its key references (id, type, pinned version) changed, or the
 * property or a key reference it used is gone, and when any key reference is removed.
 */
export function unreadableWarnings(beforeText: string, afterText: string): string[] {
  const before = parsed(beforeText);
  const after = parsed(afterText);
  const warnings: string[] = [];
  const keyOf = (doc: Doc, name: string) => JSON.stringify(own(doc.keys, name) ?? null);
  for (const [className, cls] of Object.entries(before.classes ?? {})) {
    for (const [propertyName, prop] of Object.entries(cls?.properties ?? {})) {
      if (!prop || prop.unprotect === 'none' || typeof prop.protect !== 'string') continue;
      const steps = own(before.sequences, prop.protect)?.steps ?? [];
      if (!steps.length || steps.some((s) => IRREVERSIBLE.has(String(s?.type)))) continue;
      const field = `${className}.${propertyName}`;
      const next = own(own(after.classes, className)?.properties, propertyName);
      if (!next) {
        warnings.push(`${field} is removed: values stored protected by it can no longer be unprotected`);
        continue;
      }
      if (next.protect !== prop.protect) {
        warnings.push(`${field}: its protect sequence changes from ${prop.protect} to ${String(next.protect)}: stored values become unreadable`);
        continue;
      }
      if (JSON.stringify(own(after.sequences, prop.protect)?.steps ?? null) !== JSON.stringify(steps)) {
        warnings.push(`${field}: the steps of sequence ${prop.protect} change: stored values become unreadable`);
        continue;
      }
      for (const key of new Set(steps.map((s) => s?.key).filter((k): k is string => typeof k === 'string'))) {
        if (keyOf(before, key) !== keyOf(after, key))
          warnings.push(`${field}: key reference ${key} changes (id, type or pinned version): stored values become unreadable`);
      }
    }
  }
  for (const key of Object.keys(before.keys ?? {})) {
    if (!own(after.keys, key))
      warnings.push(`key reference ${key} is removed: values protected with it can no longer be unprotected through this configuration`);
  }
  return [...new Set(warnings)];
}

/** Sections the running service reads only at start: a change to them needs a restart. */
export function restartSections(beforeText: string, afterText: string): string[] {
  const before = parsed(beforeText) as Record<string, unknown>;
  const after = parsed(afterText) as Record<string, unknown>;
  return ['identity', 'service', 'pipelines', 'responders', 'portal'].filter((s) => JSON.stringify(before[s] ?? null) !== JSON.stringify(after[s] ?? null));
}
