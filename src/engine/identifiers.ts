import type { ErrorDetail } from './errors.ts';
import { UUID, type TransformRequest } from './request/schema.ts';

/** Spec §2.8: every guid is a UUID, unique within the body; references resolve. */
export function checkIdentifiers(body: TransformRequest): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const seen = new Map<string, string>();
  const guid = (value: string, pointer: string) => {
    if (!UUID.test(value)) {
      problems.push({ code: 'GUID_INVALID', pointer, message: `${pointer} is not a UUID` });
      return;
    }
    const key = value.toLowerCase();
    const first = seen.get(key);
    if (first) problems.push({ code: 'GUID_DUPLICATE', pointer, message: `${pointer} repeats the guid of ${first}` });
    else seen.set(key, pointer);
  };
  body.rightsContexts.forEach((c, i) => guid(c.guid, `/rightsContexts/${i}/guid`));
  body.processingContexts.forEach((c, i) => guid(c.guid, `/processingContexts/${i}/guid`));
  body.requests.forEach((r, i) => guid(r.guid, `/requests/${i}/guid`));

  const rights = new Set(body.rightsContexts.map((c) => c.guid.toLowerCase()));
  const processing = new Set(body.processingContexts.map((c) => c.guid.toLowerCase()));
  body.requests.forEach((r, i) => {
    if (!rights.has(r.rightsContext.toLowerCase())) {
      problems.push({ code: 'REFERENCE_UNRESOLVED', pointer: `/requests/${i}/rightsContext`, request: r.guid, message: `/requests/${i}/rightsContext names no element of rightsContexts` });
    }
    if (!processing.has(r.processingContext.toLowerCase())) {
      problems.push({ code: 'REFERENCE_UNRESOLVED', pointer: `/requests/${i}/processingContext`, request: r.guid, message: `/requests/${i}/processingContext names no element of processingContexts` });
    }
  });
  return problems;
}
