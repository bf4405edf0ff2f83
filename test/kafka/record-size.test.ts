import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { recordBytes } from '../../src/kafka/record-size.ts';

// Kafka's record encoding as kafkajs writes it (v2 record inside a batch), the independent measure
const require = createRequire(import.meta.url);
const encodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0') as (r: {
  offsetDelta?: number;
  timestampDelta?: number;
  key: Buffer | null;
  value: Buffer | null;
  headers?: { key: string; value: Buffer | null }[];
}) => { buffer: Buffer };

const bytes = fc.option(
  fc.uint8Array({ maxLength: 300 }).map((u) => Buffer.from(u)),
  { nil: null },
);
const headers = fc.array(fc.record({ key: fc.string({ maxLength: 40 }), value: bytes }), { maxLength: 8 });

describe("recordBytes: a record's size in a batch, as the broker counts it", () => {
  it('is at least the encoded size at the largest deltas and at most 14 bytes above it at the smallest (deltas of one byte each)', () => {
    fc.assert(
      fc.property(bytes, bytes, headers, (key, value, hs) => {
        const ours = recordBytes({ key, value, headers: hs });
        expect(ours).toBeGreaterThanOrEqual(encodeRecord({ key, value, headers: hs, offsetDelta: 2 ** 31 - 1, timestampDelta: 2 ** 40 }).buffer.length);
        expect(ours - encodeRecord({ key, value, headers: hs }).buffer.length).toBeLessThanOrEqual(14);
      }),
      { numRuns: 500 },
    );
  });

  it('measures a frozen header list once, and a list that may change each time', () => {
    const frozen = Object.freeze([{ key: 'veil.pipeline', value: Buffer.from('customers') }]);
    const r = { key: null, value: Buffer.from('v'), headers: frozen };
    expect(recordBytes(r)).toBe(recordBytes({ ...r, headers: [...frozen] }));
    expect(recordBytes(r)).toBe(recordBytes(r));
    const open = [{ key: 'k', value: Buffer.from('1') as Buffer | null }];
    const before = recordBytes({ key: null, value: null, headers: open });
    open.push({ key: 'another', value: Buffer.alloc(100) });
    expect(recordBytes({ key: null, value: null, headers: open })).toBeGreaterThan(before + 100);
  });
});
