import { clientError } from './errors.ts';

// The data subject of a call's values (keys scoped to the subject, docs/erasure.md): the service
// takes one subject per request (a Subject evidence of its processing context), so values of
// several subjects become one request each, in one call.

export function roleAndSubject(options: { role?: string | undefined; subject?: string | undefined }): { role?: string; subject?: string } {
  return { ...(options.role ? { role: options.role } : {}), ...(options.subject !== undefined ? { subject: options.subject } : {}) };
}

/** Each collected value's data subject: its object's (a function of the object, or one id for all). */
export function subjectsOf<T>(
  objectOf: readonly number[],
  objects: readonly T[],
  subject: string | ((object: T, index: number) => string) | undefined,
): (string | undefined)[] {
  if (typeof subject !== 'function') return objectOf.map(() => subject);
  const byObject = new Map<number, string | undefined>();
  return objectOf.map((object) => {
    if (!byObject.has(object)) {
      const s = subject(objects[object]!, object);
      if (s !== undefined && typeof s !== 'string') throw clientError('FIELD_NOT_STRING', { pointer: `/${object}` });
      byObject.set(object, s);
    }
    return byObject.get(object);
  });
}

/** Indices grouped by their data subject, in first-seen order: one request per subject. */
export function groupBySubject(subjects: readonly (string | undefined)[]): { subject: string | undefined; indices: number[] }[] {
  const groups = new Map<string | undefined, number[]>();
  subjects.forEach((s, i) => {
    let list = groups.get(s);
    if (!list) groups.set(s, (list = []));
    list.push(i);
  });
  return [...groups].map(([subject, indices]) => ({ subject, indices }));
}
