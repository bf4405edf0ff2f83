import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planChunks, type Instance } from '../../src/client/batching.ts';

const instance = (value: string): Instance => ({ className: 'Customer', propertyName: 'email', value });
const bytes = (x: unknown) => new TextEncoder().encode(JSON.stringify(x)).length;

describe('planChunks', () => {
  it('one chunk when everything fits', () => {
    expect(planChunks([[instance('a'), instance('b')], [instance('c')]], { bodyBytes: 10_000, requests: 10, instancesPerCall: 10 }, 100)).toEqual([
      [
        { operation: 0, start: 0, end: 2 },
        { operation: 1, start: 0, end: 1 },
      ],
    ]);
    expect(planChunks([[], []], { bodyBytes: 10_000, requests: 10, instancesPerCall: 10 }, 100)).toEqual([]);
  });

  it('continues an operation in the next call', () => {
    expect(planChunks([[1, 2, 3, 4, 5].map(String).map(instance)], { bodyBytes: 10_000, requests: 10, instancesPerCall: 2 }, 100)).toEqual([
      [{ operation: 0, start: 0, end: 2 }],
      [{ operation: 0, start: 2, end: 4 }],
      [{ operation: 0, start: 4, end: 5 }],
    ]);
  });

  it('covers every instance once, in order, within every limit (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.string({ maxLength: 60, unit: 'binary' }), { maxLength: 40 }), { maxLength: 8 }),
        fc.record({
          bodyBytes: fc.integer({ min: 600, max: 5000 }),
          requests: fc.integer({ min: 1, max: 5 }),
          instancesPerCall: fc.integer({ min: 1, max: 30 }),
        }),
        (values, limits) => {
          const ops = values.map((vs) => vs.map(instance));
          const envelope = 200;
          const chunks = planChunks(ops, limits, envelope);
          const seen = chunks.flat().flatMap((p) => ops[p.operation]!.slice(p.start, p.end).map((_, i) => `${p.operation}:${p.start + i}`));
          expect(seen).toEqual(ops.flatMap((op, o) => op.map((_, i) => `${o}:${i}`)));
          for (const chunk of chunks) {
            expect(chunk.length).toBeLessThanOrEqual(limits.requests);
            expect(chunk.reduce((n, p) => n + p.end - p.start, 0)).toBeLessThanOrEqual(limits.instancesPerCall);
            // the real body: envelope + request elements with real guids
            const body =
              envelope +
              chunk.reduce(
                (n, p) =>
                  n +
                  bytes({
                    guid: crypto.randomUUID(),
                    rightsContext: crypto.randomUUID(),
                    processingContext: crypto.randomUUID(),
                    instances: ops[p.operation]!.slice(p.start, p.end),
                  }) +
                  1,
                0,
              );
            if (chunk.length > 1 || chunk[0]!.end - chunk[0]!.start > 1) expect(body).toBeLessThanOrEqual(limits.bodyBytes);
          }
        },
      ),
    );
  });
});
