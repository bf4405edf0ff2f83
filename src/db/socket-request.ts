import type { ErrorDetail, TransformRequest, TransformResponse } from '../engine/index.ts';
import type { ProtectItem } from './socket-frames.ts';

/**
 * The transform request of one PROTECT or PROTECT_SUBJECTS frame, and the way back from its
 * answer to the frame's order. veil names a data subject per processing context (a Subject
 * evidence beside the Action), so the frame's values become one processing context and one
 * request per subject, in the order the subjects first occur; values without a subject (PROTECT)
 * are one request without a Subject evidence, as before.
 */
export interface SocketCall {
  request: TransformRequest;
  /** per request (index-aligned with request.requests): the frame position of each of its instances */
  positions: number[][];
}

export const RIGHTS = '00000000-0000-4000-8000-00000000a001';
/** the processing context and the request of group g: these bases plus g (as veil_requests.py names them) */
const PROCESSING_BASE = 0xa0020000;
const REQUEST_BASE = 0xa0030000;
const guid = (base: number, g: number) => `00000000-0000-4000-8000-${(base + g).toString(16).padStart(12, '0')}`;

export function socketCall(role: string, items: readonly ProtectItem[]): SocketCall {
  const groups = new Map<string | undefined, number>();
  const positions: number[][] = [];
  const instances: { className: string; propertyName: string; value: string }[][] = [];
  const subjects: (string | undefined)[] = [];
  items.forEach((item, at) => {
    let g = groups.get(item.subject);
    if (g === undefined) {
      groups.set(item.subject, (g = positions.length));
      positions.push([]);
      instances.push([]);
      subjects.push(item.subject);
    }
    positions[g]!.push(at);
    instances[g]!.push({ className: item.className, propertyName: item.propertyName, value: item.value });
  });
  const request: TransformRequest = {
    rightsContexts: [{ guid: RIGHTS, evidences: [{ name: 'Role', value: role }] }],
    processingContexts: subjects.map((subject, g) => ({
      guid: guid(PROCESSING_BASE, g),
      evidences: [{ name: 'Action', value: 'Protect' }, ...(subject === undefined ? [] : [{ name: 'Subject', value: subject }])],
    })),
    requests: instances.map((list, g) => ({
      guid: guid(REQUEST_BASE, g),
      rightsContext: RIGHTS,
      processingContext: guid(PROCESSING_BASE, g),
      instances: list,
    })),
  };
  return { request, positions };
}

/** The protected values in the frame's order. */
export function frameValues(call: SocketCall, response: TransformResponse): string[] {
  const out = new Array<string>(call.positions.reduce((n, p) => n + p.length, 0));
  response.responses.forEach((r, g) => r.instances.forEach((inst, i) => (out[call.positions[g]![i]!] = inst.value)));
  return out;
}

/** Where a detail's instance is in the frame (undefined: the detail names no instance of this call). */
export function framePosition(call: SocketCall, detail: Pick<ErrorDetail, 'request' | 'instance'>): number | undefined {
  if (typeof detail.instance !== 'number' || detail.request === undefined) return undefined;
  const g = call.request.requests.findIndex((r) => r.guid === detail.request);
  return g < 0 ? undefined : call.positions[g]![detail.instance];
}

/** The pointer of a value of the frame, as veil names it in the call. */
export function valuePointer(call: SocketCall, at: number): { request: string; instance: number; pointer: string } {
  for (let g = 0; g < call.positions.length; g++) {
    const i = call.positions[g]!.indexOf(at);
    if (i >= 0) return { request: call.request.requests[g]!.guid, instance: i, pointer: `/requests/${g}/instances/${i}/value` };
  }
  throw new Error('no such value in the call');
}
