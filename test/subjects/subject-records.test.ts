import { describe, expect, it } from 'vitest';
import { erasureRecordKey, erasureRecordValue, keyRecordKey, keyRecordValue, parseRecord, partitionOf } from '../../src/subjects/subject-records.ts';

const ref = 'ab'.repeat(16);
const writer = '0f0e0d0c-0b0a-4908-8706-050403020100';

describe('subject-key topic records', () => {
  it('a key record round-trips; its tombstone names it', () => {
    const k = Buffer.from(keyRecordKey(ref, 2, writer));
    const wrapped = Buffer.alloc(64, 5);
    expect(parseRecord(k, Buffer.from(keyRecordValue(2, wrapped, 99)), 1)).toEqual({
      ref,
      event: { kind: 'key', gen: 2, wrapped, record: k.toString(), at: 99 },
    });
    expect(parseRecord(k, null, 7)).toEqual({ ref, event: { kind: 'tombstone', record: k.toString(), at: 7 } });
  });

  it('an erasure record round-trips', () => {
    const material = 'c'.repeat(64);
    expect(parseRecord(Buffer.from(erasureRecordKey(ref)), Buffer.from(erasureRecordValue(3, 50, material)), 1)).toEqual({
      ref,
      event: { kind: 'erased', gen: 3, at: 50, material },
    });
  });

  it('ignores what is not a record of the topic', () => {
    expect(parseRecord(Buffer.from('alice@example.com'), Buffer.from('{}'), 1)).toBeUndefined();
    expect(parseRecord(Buffer.from(keyRecordKey(ref, 2, writer)), Buffer.from(keyRecordValue(3, Buffer.alloc(4), 1)), 1)).toBeUndefined();
    expect(parseRecord(Buffer.from(erasureRecordKey(ref)), Buffer.from('not json'), 1)).toBeUndefined();
    expect(parseRecord(Buffer.from(erasureRecordKey(ref)), null, 1)).toBeUndefined();
    expect(parseRecord(null, null, 1)).toBeUndefined();
  });

  it('every record of a subject goes to one partition', () => {
    expect(partitionOf(ref, 6)).toBe(0xabababab % 6);
    expect(partitionOf(ref, 1)).toBe(0);
  });
});
