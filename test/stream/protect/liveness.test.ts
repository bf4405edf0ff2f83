import { describe, expect, it } from 'vitest';
import { KafkaContact, Liveness, reportingContact } from '../../../src/stream/protect/liveness.ts';

function clock() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

/**
 * Ticks once a second for `ms`, as the pipeline's timer does, after a fetch came back each second
 * when `fetching` (the loop turning); returns how many ticks asked for recovery.
 */
function run(l: Liveness, c: ReturnType<typeof clock>, ms: number, fetching = false): number {
  let recoveries = 0;
  for (let i = 0; i < ms / 1000; i++) {
    c.advance(1000);
    if (fetching) l.fetched();
    if (l.tick()) recoveries++;
  }
  return recoveries;
}

describe('Liveness', () => {
  it('an idle pipeline whose fetches come back stays healthy', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 60_000, recoverMs: 30_000, now: c.now });
    l.assigned(['t/0', 't/1', 't/2', 't/3']);
    expect(run(l, c, 120_000, true)).toBe(0);
    expect(l.status()).toEqual({ healthy: true });
  });

  it('a failing partition blocks progress: recovery at recoverMs, not ready at stallMs (still live: a restart would not fix it), ready again on progress', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 60_000, recoverMs: 30_000, now: c.now });
    l.assigned(['raw/0', 'raw/1']);
    l.failed('raw/0');
    // the loop turns, but the failing partition makes no progress
    let recoveries = run(l, c, 29_000, true);
    expect(recoveries).toBe(0);
    recoveries += run(l, c, 2000);
    expect(recoveries).toBe(1);
    expect(l.status().healthy).toBe(true);
    run(l, c, 30_000, true);
    expect(l.readiness()).toEqual({ ready: false, reason: 'no progress for 61 s (1 partition(s) failing)' });
    expect(l.status()).toEqual({ healthy: true });
    l.progressed('raw/0');
    expect(l.readiness()).toEqual({ ready: true });
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
    expect(l.readiness().ready).toBe(false);
    l.assigned(['raw/1']);
    l.fetched();
    expect(l.readiness().ready).toBe(true);
  });

  it('a member that owns no partition is never stalled', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 10_000, recoverMs: 5000, now: c.now });
    l.assigned([]);
    expect(run(l, c, 60_000)).toBe(0);
    expect(l.status().healthy).toBe(true);
    // kafkajs fetches nothing for a member without partitions: its silence is no outage
    expect(l.readiness().ready).toBe(true);
  });

  it('a consumer down for good is re-created at once, and not ready (but live: recovery re-creates it) while it stays down', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 10_000, recoverMs: 5000, now: c.now });
    l.assigned([]);
    l.consumerDown('KafkaJSNonRetriableError');
    expect(run(l, c, 1000)).toBe(1);
    run(l, c, 10_000);
    expect(l.readiness()).toEqual({ ready: false, reason: 'consumer down: KafkaJSNonRetriableError' });
    expect(l.status().healthy).toBe(true);
    l.fetched();
    expect(l.readiness().ready).toBe(true);
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
    expect(l.readiness()).toEqual({ ready: false, reason: 'halted: DEAD_LETTER_FAILED' });
  });
  it('a batch stuck in flight is no progress, whatever the fetches: recovery after recoverMs, unhealthy after stallMs', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 60_000, recoverMs: 30_000, now: c.now });
    l.assigned(['t/0', 't/1']);
    l.started('t/0');
    const recoveries = run(l, c, 61_000, true);
    expect(recoveries).toBe(2);
    expect(l.status()).toEqual({ healthy: false, reason: 'a batch in flight for 61 s while Kafka answered' });
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
    expect(run(l, c, 20_000, true)).toBe(0);
    l.progressed('t/0');
    l.started('t/0');
    c.advance(10_000);
    l.fetched();
    expect(l.tick()).toBe(false);
    // SIGSTOP for 70 s: the gap restarts the clocks, the batch in flight included
    c.advance(70_000);
    expect(l.tick()).toBe(false);
    expect(run(l, c, 25_000, true)).toBe(0);
    expect(l.status()).toEqual({ healthy: true });
  });

  it('Kafka silent while partitions are owned: not ready after contactMs, recovery tried, never unhealthy; ready again when it answers', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 60_000, recoverMs: 30_000, now: c.now });
    l.assigned(['raw/0', 'raw/1']);
    run(l, c, 10_000, true);
    // the broker stops: no fetch, no join, no commit for ten minutes
    let recoveries = 0;
    for (let i = 0; i < 600; i++) {
      c.advance(1000);
      if (l.tick()) recoveries++;
      expect(l.status()).toEqual({ healthy: true });
      if (i === 14) expect(l.readiness()).toEqual({ ready: false, reason: 'no answer from Kafka for 15 s' });
    }
    expect(l.readiness()).toEqual({ ready: false, reason: 'no answer from Kafka for 600 s' });
    expect(recoveries).toBe(20);
    l.assigned(['raw/0', 'raw/1']);
    l.fetched();
    expect(l.readiness()).toEqual({ ready: true });
  });

  it('a batch in flight while Kafka is silent is not stuck; once Kafka answers, stallMs of its answers make it so', () => {
    const c = clock();
    const l = new Liveness({ stallMs: 60_000, recoverMs: 30_000, now: c.now });
    l.assigned(['raw/0']);
    l.started('raw/0');
    run(l, c, 300_000);
    expect(l.status()).toEqual({ healthy: true });
    expect(l.readiness().ready).toBe(false);
    // Kafka is back and answers every second, and the batch still does not end: stuck here (the
    // 14 s before the silence outlasted contactMs counted as answered too)
    run(l, c, 45_000, true);
    expect(l.status()).toEqual({ healthy: true });
    c.advance(1000);
    l.fetched();
    l.tick();
    expect(l.status()).toEqual({ healthy: false, reason: 'a batch in flight for 60 s while Kafka answered' });
  });
});

describe("KafkaContact and reportingContact: the unprotect responders' consumers", () => {
  it("a consumer reports its joins, fetches and crashes (a stop for good to onDown); the owner's own events still reach it", () => {
    const c = clock();
    const contacts = new Map<string, KafkaContact>();
    type Events = { assigned?(a: Record<string, number[]>): void; fetched?(): void; crashed?(e: Error, restarting: boolean): void };
    const given: Events[] = [];
    const consumer = {
      on(events: Events) {
        given.push(events);
      },
      subscribe: () => 'subscribed',
    };
    const port = { consumer: (_options: { groupId: string; readCommitted: boolean }) => consumer, disconnect: () => 'closed' };
    const downs: [string, unknown][] = [];
    const watched = reportingContact(port, contacts, { now: c.now, contactMs: 15_000, onDown: (group, dead) => downs.push([group, dead]) });
    expect(watched.disconnect()).toBe('closed');
    const made = watched.consumer({ groupId: 'veil-unprotect-desk', readCommitted: true });
    expect(made.subscribe()).toBe('subscribed');
    const contact = contacts.get('veil-unprotect-desk')!;
    // before it owns a partition, silence says nothing
    c.advance(60_000);
    expect(contact.readiness()).toEqual({ ready: true });
    given.at(-1)!.assigned!({ 'unprotect.requests': [0, 1] });
    c.advance(16_000);
    expect(contact.readiness()).toEqual({ ready: false, reason: 'no answer from Kafka for 16 s' });
    given.at(-1)!.fetched!();
    expect(contact.readiness()).toEqual({ ready: true });
    let owners = 0;
    made.on({ fetched: () => owners++ });
    given.at(-1)!.fetched!();
    expect(owners).toBe(1);
    // a crash the client restarts from is no stop; one it does not restart from is
    given.at(-1)!.crashed!(Object.assign(new Error('x'), { name: 'KafkaJSConnectionError' }), true);
    expect(contact.readiness().ready).toBe(true);
    expect(downs).toEqual([]);
    given.at(-1)!.crashed!(Object.assign(new Error('x'), { name: 'KafkaJSNonRetriableError' }), false);
    expect([contact.readiness(), contact.downOn]).toEqual([{ ready: false, reason: 'consumer down: KafkaJSNonRetriableError' }, 'KafkaJSNonRetriableError']);
    // the owner is told, with the dead consumer, to re-create it
    expect(downs).toEqual([['veil-unprotect-desk', made]]);
  });
});
