import { describe, expect, it } from 'vitest';
import { DbFault } from '../../src/db/errors.ts';
import { auditedFrame, leaseGrantFrame } from '../../src/db/lease-frames.ts';
import { parseClientFrame } from '../../src/db/socket-frames.ts';
import { leaseAuditFrame, leaseFrame, parseReply } from '../helpers/db-client-frames.ts';

const payload = (frame: Buffer) => {
  expect(frame.readUInt32BE(0)).toBe(frame.length - 4);
  return frame.subarray(4);
};
const grant = {
  lease: 7,
  validForMs: 10_000,
  budget: 64,
  maxChars: 10_000,
  kind: 'aes-siv' as const,
  header: Uint8Array.of(0xa1, 0, 0, 0, 2),
  label: 'Customer.email',
  key: new Uint8Array(64).fill(9),
};

describe('lease frames (LEASE, LEASE_AUDIT, LEASE_GRANT, AUDITED)', () => {
  it("round-trip by the socket's one grammar", () => {
    expect(parseClientFrame(payload(leaseFrame('app', 'ingest', 'Customer', 'email')), 10)).toEqual({
      op: 'lease',
      dbRole: 'app',
      role: 'ingest',
      className: 'Customer',
      propertyName: 'email',
    });
    expect(
      parseClientFrame(
        payload(
          leaseAuditFrame('app', [
            { lease: 1, values: 5 },
            { lease: 2, values: 0 },
          ]),
        ),
        10,
      ),
    ).toEqual({
      op: 'lease-audit',
      dbRole: 'app',
      reports: [
        { lease: 1, values: 5 },
        { lease: 2, values: 0 },
      ],
    });
    const parsed = parseReply(payload(leaseGrantFrame(grant)));
    expect(parsed).toEqual({ kind: 'lease', grant: { ...grant, header: Buffer.from(grant.header), key: Buffer.from(grant.key) } });
    expect(parseReply(payload(auditedFrame([true, false])))).toEqual({ kind: 'audited', holds: [true, false] });
  });

  const malformed: [string, Buffer][] = [
    ['LEASE without a property', payload(leaseFrame('app', 'ingest', 'Customer', 'email')).subarray(0, -6)],
    ['LEASE with a byte after the property', Buffer.concat([payload(leaseFrame('app', 'ingest', 'C', 'p')), Buffer.from([0])])],
    ['LEASE with an empty class', payload(leaseFrame('app', 'ingest', '', 'email'))],
    ['LEASE with a database role over 63 bytes', payload(leaseFrame('r'.repeat(64), 'ingest', 'C', 'p'))],
    ['LEASE_AUDIT counting no lease', payload(leaseAuditFrame('app', []))],
    [
      'LEASE_AUDIT counting more leases than it holds',
      (() => {
        const p = Buffer.from(payload(leaseAuditFrame('app', [{ lease: 1, values: 1 }])));
        p.writeUInt16BE(2, 5);
        return p;
      })(),
    ],
    ['LEASE_AUDIT with a byte after its last report', Buffer.concat([payload(leaseAuditFrame('app', [{ lease: 1, values: 1 }])), Buffer.from([0])])],
    [
      'LEASE_AUDIT naming 257 leases',
      payload(
        leaseAuditFrame(
          'app',
          Array.from({ length: 257 }, (_, i) => ({ lease: i, values: 1 })),
        ),
      ),
    ],
  ];
  it.each(malformed)('refuses %s', (_name, bytes) => {
    expect(() => parseClientFrame(bytes, 10)).toThrow(DbFault);
  });

  it('refuses grants that break the grammar: an unknown kind, a key of another size, trailing bytes', () => {
    const bytes = Buffer.from(payload(leaseGrantFrame(grant)));
    const kindAt = 1 + 16;
    expect(() => parseReply(Buffer.concat([bytes.subarray(0, kindAt), Buffer.from([9]), bytes.subarray(kindAt + 1)]))).toThrow(/kind/);
    expect(() => parseReply(payload(leaseGrantFrame({ ...grant, key: new Uint8Array(8) })))).toThrow(DbFault);
    expect(() => parseReply(Buffer.concat([bytes, Buffer.from([0])]))).toThrow(DbFault);
  });
});
