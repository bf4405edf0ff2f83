import { describe, expect, it } from 'vitest';
import { applyEvent, erasureGeneration, isErased, type SubjectEvent, type SubjectState } from '../../src/subjects/subject-state.ts';

const material = (w: Buffer) => `id-of-${w.toString('hex')}`;
const key = (gen: number, record: string, byte = 1): SubjectEvent => ({ kind: 'key', gen, wrapped: Buffer.from([byte]), record, at: 10 });
const erased = (gen: number, at = 20): SubjectEvent => ({ kind: 'erased', gen, at });
const run = (events: SubjectEvent[]) =>
  events.reduce<{ state?: SubjectState; log: (string | undefined)[] }>(
    (acc, e) => {
      const r = applyEvent(acc.state, e, material);
      return { state: r.state, log: [...acc.log, r.change ?? r.stray] };
    },
    { log: [] },
  );

describe('subject state: one resolution for the local store and every view of the topic', () => {
  it('the first key of a generation wins; a later one for it is a stray that lost', () => {
    const { state, log } = run([key(1, 'a', 1), key(1, 'b', 2)]);
    expect(log).toEqual(['created', 'lost']);
    expect(state).toMatchObject({ gen: 1, live: true, record: 'a', wrapped: Buffer.from([1]), strays: ['b'] });
  });

  it('an erasure drops the live key and names the material destroyed; a key of that generation after it is refused', () => {
    const { state, log } = run([key(1, 'a', 7), erased(1), key(1, 'late')]);
    expect(log).toEqual(['created', 'erased', 'erased-generation']);
    expect(state).toMatchObject({ gen: 1, live: false, at: 20, material: 'id-of-07' });
    expect(state!.wrapped).toBeUndefined();
    expect(isErased(state)).toBe(true);
  });

  it('an erasure of an unknown subject takes generation 1, so a create racing it is erased whichever lands first', () => {
    expect(erasureGeneration(undefined)).toBe(1);
    expect(run([erased(1), key(1, 'a')]).state).toMatchObject({ gen: 1, live: false });
    expect(run([key(1, 'a'), erased(1)]).state).toMatchObject({ gen: 1, live: false });
  });

  it('a returning person gets the next generation; a replayed erasure of the older one does not touch it', () => {
    const { state, log } = run([key(1, 'a'), erased(1), key(2, 'b', 9), erased(1)]);
    expect(log).toEqual(['created', 'erased', 'created', undefined]);
    expect(state).toMatchObject({ gen: 2, live: true, record: 'b' });
    expect(erasureGeneration(state)).toBe(2);
  });

  it('applying the same records again changes nothing (a view re-reading after a crash)', () => {
    const events = [key(1, 'a'), key(1, 'b'), erased(1), key(2, 'c')];
    const once = run(events).state;
    const twice = run([...events, ...events]).state;
    expect(twice).toMatchObject({ gen: once!.gen, live: once!.live, record: once!.record });
  });

  it('a key skipping a generation is not accepted (a writer bases its generation on the subject it read)', () => {
    expect(run([key(3, 'x')]).state).toMatchObject({ gen: 0, live: false });
  });

  it('a tombstone of the live key erases it (compaction would remove it anyway); of a stray, forgets the stray', () => {
    expect(run([key(1, 'a'), { kind: 'tombstone', record: 'a', at: 30 }]).state).toMatchObject({ gen: 1, live: false, material: 'id-of-01' });
    expect(run([key(1, 'a'), key(1, 'b'), { kind: 'tombstone', record: 'b', at: 30 }]).state).toMatchObject({ live: true, strays: [] });
  });
});
