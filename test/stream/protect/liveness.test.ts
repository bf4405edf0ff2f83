import { describe, expect, it } from 'vitest';
import { Liveness } from '../../../src/stream/protect/liveness.ts';

function clock() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

/** Ticks once a second for `ms`, as the pipeline's timer does; returns how many ticks asked for recovery. */
function run(l: Liveness, c: ReturnType<typeof clock>, ms: number): number {
  let recoveries = 0;
  for (let i = 0; i < ms / 1000; i++) {
    c.advance(1000);
    if (l.tick()) recoveries++;
  }
  return recoveries;
}

describe('Liveness', () => {
  it('an idle pipeline whose fetches come back stays healthy', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 60_000, recoverMs: 30_000, now: c.now });
    l.assigned(['t/0', 't/1', 't/2', 't/3']);
    for (let i = 0; i < 120; i++) {
      c.advance(1000);
      l.fetched();
      expect(l.tick()).toBe(false);
    }
    expect(l.status()).toEqual({ healthy: true });
  });

  it('a failing partition blocks progress: recovery at recoverMs, unhealthy at stallMs, healthy again on progress', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 60_000, recoverMs: 30_000, now: c.now });
    l.assigned(['raw/0', 'raw/1']);
    l.failed('raw/0');
    let recoveries = 0;
    for (let i = 0; i < 29; i++) {
      c.advance(1000);
      l.fetched(); // the loop turns, but the failing partition makes no progress
      if (l.tick()) recoveries++;
    }
    expect(recoveries).toBe(0);
    recoveries += run(l, c, 2000);
    expect(recoveries).toBe(1);
    expect(l.status().healthy).toBe(true);
    run(l, c, 30_000);
    expect(l.status()).toEqual({ healthy: false, reason: 'no progress for 61 s (1 partition(s) failing)' });
    l.progressed('raw/0');
    expect(l.status()).toEqual({ healthy: true });
  });

  it('a rejoin (the recovery itself) does not clear a failing partition it still owns', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 10_000, recoverMs: 5000, now: c.now });
    l.assigned(['raw/0', 'raw/1']);
    l.failed('raw/0');
    run(l, c, 6000);
    l.assigned(['raw/0']);
    l.fetched();
    run(l, c, 5000);
    expect(l.status().healthy).toBe(false);
    l.assigned(['raw/1']);
    l.fetched();
    expect(l.status().healthy).toBe(true);
  });

  it('a member that owns no partition is never stalled', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 10_000, recoverMs: 5000, now: c.now });
    l.assigned([]);
    expect(run(l, c, 60_000)).toBe(0);
    expect(l.status().healthy).toBe(true);
  });

  it('a consumer down for good is re-created at once, and unhealthy if it stays down', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 10_000, recoverMs: 5000, now: c.now });
    l.assigned([]);
    l.consumerDown('KafkaJSNonRetriableError');
    expect(run(l, c, 1000)).toBe(1);
    run(l, c, 10_000);
    expect(l.status()).toEqual({ healthy: false, reason: 'consumer down: KafkaJSNonRetriableError' });
    l.fetched();
    expect(l.status().healthy).toBe(true);
  });

  it('a paused process (SIGSTOP) is not a stall when it resumes', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 60_000, recoverMs: 30_000, now: c.now });
    l.assigned(['raw/0']);
    c.advance(70_000);
    expect(l.tick()).toBe(false);
    expect(l.status().healthy).toBe(true);
  });

  it('halted stays unhealthy and never asks for recovery', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 60_000, recoverMs: 30_000, now: c.now });
    l.assigned(['raw/0']);
    l.halted('DEAD_LETTER_FAILED');
    expect(run(l, c, 120_000)).toBe(0);
    l.fetched();
    expect(l.status()).toEqual({ healthy: false, reason: 'halted: DEAD_LETTER_FAILED' });
  });
  it('a batch stuck in flight is no progress, whatever the fetches: recovery after recoverMs, unhealthy after stallMs', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 60_000, recoverMs: 30_000, now: c.now });
    l.assigned(['t/0', 't/1']);
    l.started('t/0');
    let recoveries = 0;
    for (let i = 0; i < 61; i++) {
      c.advance(1000);
      l.fetched();
      if (l.tick()) recoveries++;
    }
    expect(recoveries).toBe(2);
    expect(l.status()).toMatchObject({ healthy: false });
    // it ends (fails, and is read again): progress resumes with the fetches
    l.failed('t/0');
    l.progressed('t/0');
    c.advance(1000);
    l.fetched();
    expect(l.status()).toEqual({ healthy: true });
  });

  it('a batch that takes a while but finishes before recoverMs, or a process paused meanwhile, is not stuck', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 60_000, recoverMs: 30_000, now: c.now });
    l.assigned(['t/0']);
    l.started('t/0');
    for (let i = 0; i < 20; i++) {
      c.advance(1000);
      l.fetched();
      expect(l.tick()).toBe(false);
    }
    l.progressed('t/0');
    l.started('t/0');
    c.advance(10_000);
    l.fetched();
    expect(l.tick()).toBe(false);
    // SIGSTOP for 70 s: the gap restarts the clocks, the batch in flight included
    c.advance(70_000);
    expect(l.tick()).toBe(false);
    for (let i = 0; i < 25; i++) {
      c.advance(1000);
      l.fetched();
      expect(l.tick()).toBe(false);
    }
    expect(l.status()).toEqual({ healthy: true });
  });
});
