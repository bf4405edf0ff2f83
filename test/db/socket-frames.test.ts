import { describe, expect, it } from 'vitest';
import { DbFault } from '../../src/db/errors.ts';
import { errorFrame, parseClientFrame, valuesFrame } from '../../src/db/socket-frames.ts';
import { authFrame, parseReply, protectFrame } from '../helpers/db-client-frames.ts';

const payload = (frame: Buffer) => {
  expect(frame.readUInt32BE(0)).toBe(frame.length - 4);
  return frame.subarray(4);
};
const items = [
  { className: 'Customer', propertyName: 'email', value: 'ada@example.com' },
  { className: 'Customer', propertyName: 'name', value: 'Ada Lovelace — ✓' },
];

describe('database socket frames', () => {
  it('round-trips AUTH, PROTECT, VALUES, AUTH_OK and ERROR by the one grammar', () => {
    expect(parseClientFrame(payload(authFrame('a.b.c')), 10)).toEqual({ op: 'auth', token: 'a.b.c' });
    expect(parseClientFrame(payload(protectFrame('app_writer', 'ingest', items)), 10)).toEqual({ op: 'protect', dbRole: 'app_writer', role: 'ingest', items });
    expect(parseReply(payload(valuesFrame(['x', '', 'ü€𝄞'])))).toEqual({ kind: 'values', values: ['x', '', 'ü€𝄞'] });
    expect(
      parseReply(payload(errorFrame({ code: 'RATE_LIMITED', status: 429, retriable: true, title: 't', instances: [1, 2], retryAfterSeconds: 2 }))),
    ).toEqual({ kind: 'error', code: 'RATE_LIMITED', status: 429, retriable: true, title: 't', pointer: '', instances: [1, 2], retryAfterSeconds: 2 });
  });

  const malformed: [string, Buffer][] = [
    ['empty payload', Buffer.alloc(0)],
    ['unknown operation', Buffer.from([0x7f])],
    ['AUTH of another version', Buffer.from([0x01, 0x02, 0x00, 0x01, 0x41])],
    ['AUTH with an empty token', Buffer.from([0x01, 0x01, 0x00, 0x00])],
    ['AUTH with a byte after the token', Buffer.concat([payload(authFrame('t')), Buffer.from([0])])],
    ['PROTECT ending inside a value', payload(protectFrame('r', 'ingest', items)).subarray(0, -3)],
    ['PROTECT with bytes after its last value', Buffer.concat([payload(protectFrame('r', 'ingest', items)), Buffer.from('x')])],
    [
      'PROTECT counting more instances than it holds',
      (() => {
        const p = Buffer.from(payload(protectFrame('r', 'ingest', items)));
        p.writeUInt32BE(3, 1 + 2 + 7);
        return p;
      })(),
    ],
    ['PROTECT counting zero instances', Buffer.from([0x02, 1, 0x72, 1, 0x69, 0, 0, 0, 0])],
    ['PROTECT with a value that is not UTF-8', Buffer.from([0x02, 1, 0x72, 1, 0x69, 0, 0, 0, 1, 1, 0x43, 1, 0x65, 0, 0, 0, 2, 0xc3, 0x28])],
    ['PROTECT with an empty class name', Buffer.from([0x02, 1, 0x72, 1, 0x69, 0, 0, 0, 1, 0, 1, 0x65, 0, 0, 0, 0])],
    ['PROTECT with a database role over 63 bytes', payload(protectFrame('r'.repeat(64), 'ingest', items))],
  ];
  it.each(malformed)('refuses %s', (_name, bytes) => {
    expect(() => parseClientFrame(bytes, 10)).toThrow(DbFault);
  });

  it('refuses a count above the limit before reading the instances', () => {
    expect(() => parseClientFrame(payload(protectFrame('r', 'ingest', items)), 1)).toThrow(/count/);
  });

  it('never quotes the frame in its refusal', () => {
    const secret = 'ada-secret@example.com';
    const bytes = Buffer.concat([payload(protectFrame('r', 'ingest', [{ className: 'Customer', propertyName: 'email', value: secret }])), Buffer.from(secret)]);
    try {
      parseClientFrame(bytes, 10);
      expect.unreachable();
    } catch (e) {
      expect(String((e as Error).message)).not.toContain('ada');
    }
  });

  it('refuses replies that break the grammar', () => {
    expect(() => parseReply(Buffer.from([0x82, 0, 0, 0, 2, 0, 0, 0, 1, 0x41]))).toThrow(DbFault);
    expect(() => parseReply(Buffer.concat([payload(valuesFrame(['a'])), Buffer.from([0])]))).toThrow(DbFault);
    expect(() => parseReply(Buffer.from([0x99]))).toThrow(DbFault);
  });
});
