import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { packItems, packOutcomes, SpareBuffers, unpackItems, unpackOutcomes } from '../../../src/stream/protect/chunk-codec.ts';
import type { ChunkItem, ChunkOutcome } from '../../../src/stream/protect/record-protector.ts';

const buffer = fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a));
const bytes = fc.option(buffer, { nil: null });
/** a protected record's outcome: its key and value, and with them (or not) its protected fields and what report mode found */
const protectedOutcomes = [
  fc.record({ key: bytes, value: buffer }),
  fc.record(
    { key: bytes, value: buffer, fields: fc.string(), reported: fc.record({ path: fc.string(), kind: fc.string() }) },
    { requiredKeys: ['key', 'value'] },
  ),
] as const;

describe('chunk codec (records to and from protection workers)', () => {
  it('round-trips items byte for byte: null and empty keys and values, repeated and unicode topics', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ topic: fc.constantFrom('clean.a', 'clean.ü', 'c'), key: bytes, value: bytes })), (items: ChunkItem[]) => {
        const packed = packItems(items);
        expect(packed.topics.length).toBeLessThanOrEqual(3);
        expect(unpackItems(packed)).toEqual(items);
      }),
    );
  });

  it('round-trips outcomes: protected keys and values (with what report mode found), dead-letter codes with their path, kind and schema id', () => {
    const outcome = fc.oneof(
      ...protectedOutcomes,
      fc.record({ code: fc.constantFrom('RECORD_MALFORMED', 'KEY_MISSING', 'FIELD_MISSING') }),
      fc.record(
        { code: fc.constantFrom('SCHEMA_PATH_UNKNOWN', 'UNMAPPED_PERSONAL_DATA'), path: fc.string(), kind: fc.string(), schema: fc.nat() },
        { requiredKeys: ['code'] },
      ),
    );
    fc.assert(
      fc.property(fc.array(outcome), (outcomes: ChunkOutcome[]) => {
        expect(unpackOutcomes(packOutcomes(outcomes))).toEqual(outcomes);
      }),
    );
  });

  it('sends each distinct string once, however many records carry it (protected-field lists, codes)', () => {
    const outcomes: ChunkOutcome[] = Array.from({ length: 1000 }, (_, i) =>
      i % 10 === 0
        ? { code: 'UNMAPPED_PERSONAL_DATA', path: 'contact.email', kind: 'email' }
        : { key: null, value: Buffer.from('{}'), fields: i % 2 ? 'email' : 'email,name' },
    );
    const packed = packOutcomes(outcomes);
    expect(packed.strings.sort()).toEqual(['UNMAPPED_PERSONAL_DATA', 'contact.email', 'email', 'email,name']);
    expect(unpackOutcomes(packed)).toEqual(outcomes);
  });

  it("packs into a buffer of its own, never Buffer's shared pool (it is transferred)", () => {
    const small = Buffer.from('x');
    const packed = packItems([{ topic: 't', key: small, value: small }]);
    expect(packed.data).not.toBe(small.buffer);
    expect(packed.data.byteLength).toBe(4 + 5 + 5);
  });

  it('packs outcomes into a larger spare buffer and reads back only what was written (a recycled buffer keeps old bytes past the end)', () => {
    const outcome = fc.oneof(
      ...protectedOutcomes,
      fc.record({ code: fc.constantFrom('RECORD_MALFORMED', 'UNMAPPED_PERSONAL_DATA'), path: fc.string() }, { requiredKeys: ['code'] }),
    );
    fc.assert(
      fc.property(fc.array(outcome), fc.array(outcome), (old: ChunkOutcome[], outcomes: ChunkOutcome[]) => {
        const spares = new SpareBuffers();
        const first = packOutcomes(old);
        const big = new ArrayBuffer((first.length ?? 0) + 4096);
        new Uint8Array(big).fill(0xff);
        spares.give(big);
        const packed = packOutcomes(outcomes, spares);
        expect(packed.data).toBe(big);
        expect(unpackOutcomes(packed)).toEqual(outcomes);
      }),
    );
  });

  it('SpareBuffers: a spare large enough is reused once, a smaller one is not; detached buffers and more than its bound are not kept', () => {
    const spares = new SpareBuffers(2);
    const small = new ArrayBuffer(10);
    const large = new ArrayBuffer(100);
    spares.give(small);
    spares.give(large);
    spares.give(new ArrayBuffer(1000)); // over the bound of 2: dropped
    expect(spares.take(50).buffer).toBe(large);
    const fresh = spares.take(50);
    expect([small, large]).not.toContain(fresh.buffer);
    expect(fresh.length).toBe(50);
    expect(spares.take(10).buffer).toBe(small);
    const gone = new ArrayBuffer(100);
    structuredClone(gone, { transfer: [gone] });
    spares.give(gone);
    expect(spares.take(1).buffer).not.toBe(gone);
  });
});
