import type { ErrorDetail } from './errors.ts';
import { UUID, type TransformRequest } from './request/schema.ts';

const LISTS = ['rightsContexts', 'processingContexts', 'requests'] as const;
const guidPointer = (at: number) => `/${LISTS[at % 3]}/${Math.floor(at / 3)}/guid`;

/** Spec §2.8: every guid is a UUID, unique within the body; references resolve. */
export function checkIdentifiers(body: TransformRequest): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  // lower-cased guid → where it was first met, as 3 × index + list: a pointer's text is made only for a problem
  const seen = new Map<string, number>();
  const guid = (value: string, list: 0 | 1 | 2, index: number) => {
    const at = 3 * index + list;
    if (!UUID.test(value)) {
      const pointer = guidPointer(at);
      problems.push({ code: 'GUID_INVALID', pointer, message: `${pointer} is not a UUID` });
      return;
    }
    const key = value.toLowerCase();
    const first = seen.get(key);
    if (first === undefined) seen.set(key, at);
    else {
      const pointer = guidPointer(at);
      problems.push({ code: 'GUID_DUPLICATE', pointer, message: `${pointer} repeats the guid of ${guidPointer(first)}` });
    }
  };
  body.rightsContexts.forEach((c, i) => guid(c.guid, 0, i));
  body.processingContexts.forEach((c, i) => guid(c.guid, 1, i));
  body.requests.forEach((r, i) => guid(r.guid, 2, i));

  const rights = new Set(body.rightsContexts.map((c) => c.guid.toLowerCase()));
  const processing = new Set(body.processingContexts.map((c) => c.guid.toLowerCase()));
  body.requests.forEach((r, i) => {
    if (!rights.has(r.rightsContext.toLowerCase())) {
      problems.push({
        code: 'REFERENCE_UNRESOLVED',
        pointer: `/requests/${i}/rightsContext`,
        request: r.guid,
        message: `/requests/${i}/rightsContext names no element of rightsContexts`,
      });
    }
    if (!processing.has(r.processingContext.toLowerCase())) {
      problems.push({
        code: 'REFERENCE_UNRESOLVED',
        pointer: `/requests/${i}/processingContext`,
        request: r.guid,
        message: `/requests/${i}/processingContext names no element of processingContexts`,
      });
    }
  });
  return problems;
}
