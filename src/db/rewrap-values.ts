import { isSubjectId, type SubjectKeyring } from '../engine/index.ts';

/**
 * The re-protection of one batch's values, column by column (`veil db rewrap`, src/db/rewrap.ts).
 * A table whose fields are protected under keys scoped to the data subject (issue 29) names each
 * row's subject in a column: the batch's subjects' keys are fetched at once (never created — a
 * rewrap must not give an erased person a new key), and each subject's values run under its own
 * key. A value of an erased subject comes back as SUBJECT_ERASED, which the runner keeps as
 * stored and counts; a value whose row has no subject, or not a subject id, is refused.
 */

/** A value's outcome: its new protected value, or the code it was refused with (never the value). */
export type ValueOutcome = string | { code: string };

/** What the runner needs of a field's re-protection (Engine.bindRewrap's Chain has it). */
export interface RewrapTransform {
  many(values: readonly string[]): ValueOutcome[];
}

/** The subject column's part: the batch's keys, and running a subject's values under its key (Engine.withSubject). */
export interface RewrapSubjects {
  /** the subjects' keys as they are, never created (fetchSubjectKeys with create: false) */
  keys(ids: readonly string[]): Promise<SubjectKeyring | undefined>;
  within<T>(subject: string, ring: SubjectKeyring | undefined, fn: () => T): T;
}

/**
 * Each column's outcomes, index-aligned with `stored` (per column, per row): null where the value
 * is NULL. `subjectIds`: each row's subject (as text), when the table names a subject column.
 */
export async function rewrapValues(
  chains: readonly RewrapTransform[],
  stored: readonly (readonly (string | null)[])[],
  subjects?: { ids: readonly (string | null)[]; access: RewrapSubjects },
): Promise<(ValueOutcome | null)[][]> {
  const out = stored.map((values) => values.map((): ValueOutcome | null => null));
  const rows = stored[0]?.length ?? 0;
  if (!subjects) {
    stored.forEach((values, ci) => runRows(chains[ci]!, values, range(rows), out[ci]!));
    return out;
  }
  const groups = new Map<string, number[]>();
  for (let ri = 0; ri < rows; ri++) {
    const id = subjects.ids[ri] ?? null;
    const code = id === null ? 'SUBJECT_REQUIRED' : isSubjectId(id) ? undefined : 'SUBJECT_ID_INVALID';
    if (code) {
      stored.forEach((values, ci) => {
        if (values[ri] !== null) out[ci]![ri] = { code };
      });
      continue;
    }
    const group = groups.get(id!) ?? [];
    group.push(ri);
    groups.set(id!, group);
  }
  if (groups.size === 0) return out;
  const ring = await subjects.access.keys([...groups.keys()]);
  for (const [id, at] of groups) {
    subjects.access.within(id, ring, () => stored.forEach((values, ci) => runRows(chains[ci]!, values, at, out[ci]!)));
  }
  return out;
}

/** One column's non-NULL values of the rows `at`, through its chain, into `into`. */
function runRows(chain: RewrapTransform, values: readonly (string | null)[], at: readonly number[], into: (ValueOutcome | null)[]): void {
  const present = at.filter((ri) => values[ri] !== null);
  if (present.length === 0) return;
  chain.many(present.map((ri) => values[ri]!)).forEach((outcome, i) => (into[present[i]!] = outcome));
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
