import { compileExpectation } from '../../../json-bytes/paths.ts';
import { isNotJson } from '../../../json-bytes/errors.ts';
import { EV_MISSING, EV_RAW, EV_STRING, leafText, scanJson } from '../../../json-bytes/scan.ts';
import { jsonPathOf } from './json-splice.ts';
import { compilePath } from '../record-path.ts';

/** A record's data subject as read from its value, or why there is none to use. */
export type SubjectRead = { id: string } | { code: 'SUBJECT_REQUIRED' | 'SUBJECT_ID_INVALID' | 'RECORD_MALFORMED' };

/**
 * Reads a JSON record's data subject at `path` (`customer.id`; no `[]` step), with the JSON
 * scanner the serde protects with, so both see one document: the string's value, or a number's
 * text as written. Absent or null: SUBJECT_REQUIRED; an object or array there: SUBJECT_ID_INVALID. Found more than once (a duplicate key, or two
 * spellings when keys compare case-insensitively): SUBJECT_ID_INVALID — readers of the clean
 * topic might take the other one, and an erasure of theirs must not miss the key the values were
 * protected under. Not JSON: RECORD_MALFORMED.
 */
export function jsonSubjectReader(path: string, foldKeys: boolean): (value: Buffer) => SubjectRead {
  const compiled = compilePath(path);
  if (compiled.some((step) => step.each)) throw new Error(`a subject path names one value, not each element of an array: ${path}`);
  const root = compileExpectation([jsonPathOf(compiled)], { foldKeys });
  return (value) => {
    const events: number[] = [];
    try {
      scanJson(value, root, events);
    } catch (e) {
      if (isNotJson(e)) return { code: 'RECORD_MALFORMED' };
      throw e;
    }
    let id: string | undefined;
    let found = 0;
    for (let i = 0; i < events.length; i += 4) {
      const kind = events[i + 1]!;
      if (kind === EV_MISSING) continue;
      // an object or an array where the subject should be is no subject id
      if (kind !== EV_STRING && kind !== EV_RAW) return { code: 'SUBJECT_ID_INVALID' };
      found++;
      id = leafText(value, kind, events[i + 2]!, events[i + 3]!);
    }
    if (found > 1) return { code: 'SUBJECT_ID_INVALID' };
    return id === undefined ? { code: 'SUBJECT_REQUIRED' } : { id };
  };
}
