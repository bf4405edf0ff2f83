export interface LivenessOptions {
  /** a batch in flight this long while Kafka answers: unhealthy (default 60 s); no progress this long: not ready */
  stallMs: number;
  /** no progress for this long: re-create the consumer and producers first */
  recoverMs: number;
  /** no answer from Kafka for this long: not ready (default: 15 s, at most recoverMs) */
  contactMs?: number;
  now: () => number;
}

export interface LivenessStatus {
  healthy: boolean;
  /** why not: never a value, only a state and an error code */
  reason?: string;
}

export interface ReadinessStatus {
  ready: boolean;
  /** why not: a state and an error code, never a value */
  reason?: string;
}

/** a gap this long between two ticks is the process paused (SIGSTOP, a blocked loop), not the pipeline stalling */
const PAUSE_MS = 5000;

/**
 * When a consumer last heard from Kafka: a fetch came back (librdkafka: its group is up, said each
 * second from its own thread; kafkajs: a fetch, also an empty one), a join, a committed batch.
 * What Kafka does not answer is no fault of this process: a restart would not bring it back.
 */
export class KafkaContact {
  private last: number;
  private readonly now: () => number;
  private readonly contactMs: number;
  private down?: string;
  /** a member that owns no partition may fetch nothing (kafkajs): its silence says nothing */
  private owns = false;

  constructor(options: { now: () => number; contactMs: number }) {
    this.now = options.now;
    this.contactMs = options.contactMs;
    this.last = options.now();
  }

  /** a (re)join: Kafka answered, with this many partitions */
  joined(partitions: number): void {
    this.owns = partitions > 0;
    this.heard();
  }

  /** Kafka answered */
  heard(): void {
    this.last = this.now();
    this.down = undefined;
  }

  /** the consumer stopped and its client does not restart it */
  consumerDown(code: string): void {
    this.down = code;
  }

  /** a consumer made again for the group: it is not ready, nor silent for less, before Kafka answers it */
  succeeds(previous: KafkaContact): void {
    this.last = previous.last;
    this.owns = previous.owns;
    this.down = previous.down;
  }

  /** a pause of the whole process is nobody's silence: the count restarts */
  paused(): void {
    this.last = this.now();
  }

  get inTouch(): boolean {
    return this.down === undefined && this.now() - this.last < this.contactMs;
  }

  /** the code the consumer stopped on, while it stays down */
  get downOn(): string | undefined {
    return this.down;
  }

  /** not ready while the consumer is down, or owns partitions and Kafka has not answered for contactMs */
  readiness(): ReadinessStatus {
    if (this.down !== undefined) return { ready: false, reason: `consumer down: ${this.down}` };
    const silent = this.now() - this.last;
    return !this.owns || silent < this.contactMs ? { ready: true } : { ready: false, reason: `no answer from Kafka for ${Math.round(silent / 1000)} s` };
  }

  /** the events a consumer reports contact with (ConsumerEvents) */
  events(): { assigned(assignment: Record<string, number[]>): void; fetched(): void; crashed(error: Error, restarting: boolean): void } {
    return {
      assigned: (assignment) => this.joined(Object.values(assignment).reduce((n, parts) => n + parts.length, 0)),
      fetched: () => this.heard(),
      crashed: (error, restarting) => {
        if (!restarting) this.consumerDown(error.name);
      },
    };
  }
}

/**
 * Liveness and readiness of a pipeline, kept apart so that an outage of Kafka (or of the registry,
 * the KMS) never restarts the process: the pipeline recovers by itself once they answer, and a
 * restart would only add a cold start to the outage. Liveness (/healthz) fails for what a restart
 * fixes: a halted pipeline, or a batch in flight for stallMs of time during which Kafka answered
 * — stuck in this process, since every call a batch makes has a deadline. Readiness (/readyz)
 * fails while the pipeline cannot do its work: its consumer down or silent, or no progress for
 * stallMs (a failing partition). Progress is a committed batch, or a turn of the fetch loop while
 * no partition has a failing batch or one stuck in flight (an idle pipeline is ready). A pipeline
 * that owns partitions and makes none for `recoverMs` asks to be recovered (its consumer and
 * producers re-created). A gap in the clock's ticks (the process was paused, e.g. SIGSTOP) is not
 * a stall: the counts restart.
 */
export class Liveness {
  private readonly options: LivenessOptions;
  private readonly contact: KafkaContact;
  private lastProgress: number;
  private lastTick: number;
  private lastRecovery = 0;
  private owned = 0;
  private readonly failing = new Set<string>();
  /** partitions with a batch in flight: since when, and for how long of it Kafka answered */
  private readonly running = new Map<string, { since: number; answered: number }>();
  private halt?: string;

  constructor(options: LivenessOptions) {
    this.options = options;
    this.lastProgress = this.lastTick = options.now();
    this.contact = new KafkaContact({ now: options.now, contactMs: options.contactMs ?? Math.min(15_000, options.recoverMs) });
  }

  /** after a (re)join: the partitions now owned; a failing one stays failing while owned */
  assigned(partitions: readonly string[]): void {
    this.owned = partitions.length;
    const owned = new Set(partitions);
    for (const p of this.failing) if (!owned.has(p)) this.failing.delete(p);
    for (const p of this.running.keys()) if (!owned.has(p)) this.running.delete(p);
    this.contact.joined(partitions.length);
  }

  fetched(): void {
    this.contact.heard();
    const now = this.options.now();
    if (this.failing.size === 0 && this.inFlightFor(now) < this.options.recoverMs) this.lastProgress = now;
  }

  /** a batch of the partition began */
  started(partition: string): void {
    this.running.set(partition, { since: this.options.now(), answered: 0 });
  }

  progressed(partition: string): void {
    this.running.delete(partition);
    this.failing.delete(partition);
    this.contact.heard();
    this.lastProgress = this.options.now();
  }

  failed(partition: string): void {
    this.running.delete(partition);
    this.failing.add(partition);
  }

  /**
   * How long the oldest batch in flight has run. Every call a batch makes has a deadline (60 s at
   * most), so one that runs past the recovery time is stuck, or waits on a Kafka that does not
   * answer: fetches that go on beside it are no progress either way.
   */
  private inFlightFor(now: number): number {
    let oldest = now;
    for (const { since } of this.running.values()) oldest = Math.min(oldest, since);
    return now - oldest;
  }

  /** the longest time a batch in flight has waited while Kafka answered: only that is stuck here */
  private stuckFor(): number {
    let longest = 0;
    for (const { answered } of this.running.values()) longest = Math.max(longest, answered);
    return longest;
  }

  /** the consumer stopped and will not restart by itself */
  consumerDown(code: string): void {
    this.contact.consumerDown(code);
  }

  halted(code: string): void {
    this.halt = code;
  }

  /** Called about once a second: true when the pipeline should re-create its consumer now. */
  tick(): boolean {
    const now = this.options.now();
    const since = now - this.lastTick;
    this.lastTick = now;
    if (since > PAUSE_MS) {
      // a pause of the whole process is not a pipeline stall (nor a stuck batch, nor Kafka's silence)
      this.lastProgress = now;
      for (const batch of this.running.values()) Object.assign(batch, { since: now, answered: 0 });
      this.contact.paused();
    } else if (this.contact.inTouch) {
      for (const batch of this.running.values()) batch.answered += since;
    }
    if (this.halt) return false;
    const idle = now - this.lastProgress;
    // Kafka's silence alone is no reason: a silent consumer makes no progress either, and that counts from recoverMs
    const stuck = this.contact.downOn !== undefined || (this.owned > 0 && (idle >= this.options.recoverMs || this.inFlightFor(now) >= this.options.recoverMs));
    if (!stuck || now - this.lastRecovery < this.options.recoverMs) return false;
    this.lastRecovery = now;
    return true;
  }

  /** Liveness (/healthz): what a restart fixes, and nothing Kafka's absence explains. */
  status(): LivenessStatus {
    if (this.halt) return { healthy: false, reason: `halted: ${this.halt}` };
    const stuck = this.stuckFor();
    if (this.owned > 0 && stuck >= this.options.stallMs)
      return { healthy: false, reason: `a batch in flight for ${Math.round(stuck / 1000)} s while Kafka answered` };
    return { healthy: true };
  }

  /** Readiness (/readyz): whether the pipeline does its work now; /healthz shows why not. */
  readiness(): ReadinessStatus {
    if (this.halt) return { ready: false, reason: `halted: ${this.halt}` };
    const kafka = this.contact.readiness();
    if (!kafka.ready) return kafka;
    const idle = this.options.now() - this.lastProgress;
    if (this.owned > 0 && idle >= this.options.stallMs)
      return { ready: false, reason: `no progress for ${Math.round(idle / 1000)} s${this.failing.size ? ` (${this.failing.size} partition(s) failing)` : ''}` };
    return { ready: true };
  }
}

interface ContactEvents {
  assigned?(assignment: Record<string, number[]>): void;
  fetched?(): void;
  crashed?(error: Error, restarting: boolean): void;
}

/**
 * The port, each consumer it makes reporting its contact with Kafka into `contacts` (by group):
 * for owners that watch none themselves (the unprotect responders). Events the owner gives its
 * consumer later still reach it, beside these. `onDown`: the consumer stopped and its client does
 * not restart it (the owner may re-create it).
 */
export function reportingContact<P extends { consumer(options: { groupId: string; readCommitted: boolean }): { on(events: ContactEvents): void } }>(
  port: P,
  contacts: Map<string, KafkaContact>,
  options: { now: () => number; contactMs: number; onDown?: (groupId: string, consumer: ReturnType<P['consumer']>) => void },
): P {
  type C = ReturnType<P['consumer']>;
  const watched = (consumer: C, groupId: string): C => {
    const contact = new KafkaContact(options);
    const previous = contacts.get(groupId);
    if (previous) contact.succeeds(previous);
    contacts.set(groupId, contact);
    const events = contact.events();
    const mine: typeof events = {
      ...events,
      crashed: (e, restarting) => {
        events.crashed(e, restarting);
        if (!restarting) options.onDown?.(groupId, consumer);
      },
    };
    const on = consumer.on.bind(consumer);
    on(mine);
    consumer.on = (events: ContactEvents) =>
      on({
        assigned: (a) => {
          mine.assigned(a);
          events.assigned?.(a);
        },
        fetched: () => {
          mine.fetched();
          events.fetched?.();
        },
        crashed: (e, restarting) => {
          mine.crashed(e, restarting);
          events.crashed?.(e, restarting);
        },
      });
    return consumer;
  };
  return new Proxy(port, {
    get: (target, prop, receiver) =>
      prop === 'consumer'
        ? (o: { groupId: string; readCommitted: boolean }) => watched(target.consumer(o) as C, o.groupId)
        : (Reflect.get(target, prop, receiver) as unknown),
  });
}
