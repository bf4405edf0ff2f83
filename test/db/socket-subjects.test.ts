import { describe, expect, it } from 'vitest';
import { DbFault } from '../../src/db/errors.ts';
import { OP_PROTECT, OP_PROTECT_SUBJECTS, parseClientFrame } from '../../src/db/socket-frames.ts';
import { framePosition, frameValues, socketCall, valuePointer } from '../../src/db/socket-request.ts';
import { protectFrame } from '../helpers/db-client-frames.ts';

/** PROTECT_SUBJECTS (keys scoped to the data subject, issue 29): each value with its subject, one request per subject. */
const payload = (frame: Buffer) => frame.subarray(4);
const item = (value: string, subject?: string) => ({ className: 'Person', propertyName: 'email', value, ...(subject === undefined ? {} : { subject }) });

describe('database socket: values with their data subject', () => {
  it('round-trips PROTECT_SUBJECTS; values without a subject stay PROTECT', () => {
    const items = [item('a@example.org', 'cust-1'), item('b@example.org', 'cust-2 ✓')];
    const frame = payload(protectFrame('app', 'ingest', items));
    expect(frame[0]).toBe(OP_PROTECT_SUBJECTS);
    expect(parseClientFrame(frame, 10)).toEqual({ op: 'protect', dbRole: 'app', role: 'ingest', items });
    expect(payload(protectFrame('app', 'ingest', [item('x')]))[0]).toBe(OP_PROTECT);
  });

  it('refuses an empty subject, one over 512 bytes, one that is not UTF-8, and a count beyond the frame', () => {
    const bad = [
      payload(protectFrame('app', 'ingest', [item('x', '')])),
      payload(protectFrame('app', 'ingest', [item('x', 's'.repeat(513))])),
      (() => {
        const p = Buffer.from(payload(protectFrame('app', 'ingest', [item('x', 'ab')])));
        p[p.length - 7] = 0xc3;
        p[p.length - 6] = 0x28;
        return p;
      })(),
      (() => {
        const p = Buffer.from(payload(protectFrame('app', 'ingest', [item('x', 'ab')])));
        p.writeUInt32BE(2, 1 + 4 + 7);
        return p;
      })(),
    ];
    for (const bytes of bad) expect(() => parseClientFrame(bytes, 10)).toThrow(DbFault);
  });

  it("groups the frame's values into one processing context and request per subject, and maps answers and errors back to the frame's order", () => {
    const call = socketCall('ingest', [item('v0', 'ann'), item('v1', 'bob'), item('v2', 'ann'), item('v3', 'cy')]);
    expect(call.request.processingContexts.map((c) => c.evidences)).toEqual(
      ['ann', 'bob', 'cy'].map((s) => [
        { name: 'Action', value: 'Protect' },
        { name: 'Subject', value: s },
      ]),
    );
    expect(call.request.requests.map((r) => r.instances.map((i) => i.value))).toEqual([['v0', 'v2'], ['v1'], ['v3']]);
    expect(call.request.requests.every((r) => r.instances.every((i) => !('subject' in i)))).toBe(true);
    const response = {
      responses: call.request.requests.map((r) => ({ request: r.guid, instances: r.instances.map((i) => ({ ...i, value: `p(${i.value})` })) })),
    };
    expect(frameValues(call, response)).toEqual(['p(v0)', 'p(v1)', 'p(v2)', 'p(v3)']);
    expect(framePosition(call, { request: call.request.requests[0]!.guid, instance: 1 })).toBe(2);
    expect(framePosition(call, { request: call.request.requests[2]!.guid, instance: 0 })).toBe(3);
    expect(framePosition(call, { request: 'other', instance: 0 })).toBeUndefined();
    expect(valuePointer(call, 2)).toEqual({ request: call.request.requests[0]!.guid, instance: 1, pointer: '/requests/0/instances/1/value' });
  });

  it('values without a subject are one request without a Subject evidence, as before', () => {
    const call = socketCall('ingest', [item('v0'), item('v1')]);
    expect(call.request.processingContexts).toEqual([{ guid: expect.any(String), evidences: [{ name: 'Action', value: 'Protect' }] }]);
    expect(call.request.requests).toHaveLength(1);
  });
});
