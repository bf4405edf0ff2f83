import type { Admin } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { fetchTopicOffsetsOnceLed } from '../../src/kafka/kafkajs-topic-offsets.ts';

const OFFSETS = [{ partition: 0, offset: '7', high: '7', low: '0' }];
const notLeader = Object.assign(new Error('This server is not the leader for that topic-partition'), {
  name: 'KafkaJSProtocolError',
  retriable: true,
  type: 'NOT_LEADER_FOR_PARTITION',
});
const denied = Object.assign(new Error('Not authorized to access topics'), {
  name: 'KafkaJSProtocolError',
  retriable: false,
  type: 'TOPIC_AUTHORIZATION_FAILED',
});

/** An admin whose fetchTopicOffsets answers `failures` in turn, then the offsets; every call is counted. */
function fakeAdmin(failures: Error[]) {
  const calls = { offsets: 0, metadata: 0 };
  const admin = {
    fetchTopicOffsets: async (topic: string) => {
      expect(topic).toBe('veil.control');
      const failure = failures[calls.offsets++];
      if (failure) throw failure;
      return OFFSETS;
    },
    fetchTopicMetadata: async () => {
      calls.metadata++;
      return { topics: [] };
    },
  } as unknown as Admin;
  return { admin, calls };
}

/** A clock that moves only when slept on. */
function fakeClock() {
  let t = 0;
  const slept: number[] = [];
  return { now: () => t, sleep: async (ms: number) => void (slept.push(ms), (t += ms)), slept };
}

describe('fetchTopicOffsetsOnceLed', () => {
  it('returns the offsets of a partition led from the start, in one call', async () => {
    const { admin, calls } = fakeAdmin([]);
    expect(await fetchTopicOffsetsOnceLed(admin, 'veil.control')).toEqual(OFFSETS);
    expect(calls).toEqual({ offsets: 1, metadata: 0 });
  });

  it('retries a retriable answer (a leader not yet serving the partition) with doubling pauses, refreshing the metadata each time', async () => {
    const { admin, calls } = fakeAdmin([notLeader, notLeader, notLeader, notLeader, notLeader]);
    const clock = fakeClock();
    expect(await fetchTopicOffsetsOnceLed(admin, 'veil.control', clock)).toEqual(OFFSETS);
    expect(calls).toEqual({ offsets: 6, metadata: 5 });
    expect(clock.slept).toEqual([100, 200, 400, 800, 1000]);
  });

  it('throws any other error at once, without retrying', async () => {
    const { admin, calls } = fakeAdmin([denied]);
    const clock = fakeClock();
    await expect(fetchTopicOffsetsOnceLed(admin, 'veil.control', clock)).rejects.toBe(denied);
    expect([calls.offsets, clock.slept]).toEqual([1, []]);
    const plain = fakeAdmin([new Error('socket hang up')]);
    await expect(fetchTopicOffsetsOnceLed(plain.admin, 'veil.control', clock)).rejects.toThrow('socket hang up');
    expect(plain.calls.offsets).toBe(1);
  });

  it('gives up within its time limit: the last retriable error is thrown, no pause goes past the limit', async () => {
    const { admin, calls } = fakeAdmin(Array.from({ length: 100 }, () => notLeader));
    const clock = fakeClock();
    await expect(fetchTopicOffsetsOnceLed(admin, 'veil.control', { ...clock, timeoutMs: 3_000 })).rejects.toBe(notLeader);
    expect(clock.slept).toEqual([100, 200, 400, 800, 1000]);
    expect(clock.now()).toBeLessThanOrEqual(3_000);
    expect(calls.offsets).toBe(6);
  });
});
