export interface LivenessOptions {
  /** no progress for this long while owning partitions: unhealthy (default 60 s) */
  stallMs: number;
  /** no progress for this long: re-create the consumer and producers first */
  recoverMs: number;
  now: () => number;
}

export interface LivenessStatus {
  healthy: boolean;
  /** why not: never a value, only a state and an error code */
  reason?: string;
}

/**
 * Whether a pipeline makes progress. Progress is a committed batch, or a turn of the fetch loop
 * while no partition has a failing batch or one stuck in flight (an idle pipeline is healthy). A pipeline that owns
 * partitions and makes none for `recoverMs` asks to be recovered; after `stallMs` it is
 * unhealthy, and so is one that halted or whose consumer stays down. A gap in the clock's ticks
 * (the process was paused, e.g. SIGSTOP) is not a stall: the count restarts.
 */
export class Liveness {
  private readonly options: LivenessOptions;
  private lastProgress: number;
  private lastTick: number;
  private lastRecovery = 0;
  private owned = 0;
  private readonly failing = new Set<string>();
  /** partitions with a batch in flight, and since when */
  private readonly running = new Map<string, number>();
  private halt?: string;
  private down?: string;

  constructor(options: LivenessOptions) {
    this.options = options;
    this.lastProgress = this.lastTick = options.now();
  }

  /** after a (re)join: the partitions now owned; a failing one stays failing while owned */
  assigned(partitions: readonly string[]): void {
    this.owned = partitions.length;
    const owned = new Set(partitions);
    for (const p of this.failing) if (!owned.has(p)) this.failing.delete(p);
    for (const p of this.running.keys()) if (!owned.has(p)) this.running.delete(p);
    this.down = undefined;
  }

  fetched(): void {
    this.down = undefined;
    const now = this.options.now();
    if (this.failing.size === 0 && this.hungFor(now) < this.options.recoverMs) this.lastProgress = now;
  }

  /** a batch of the partition began */
  started(partition: string): void {
    this.running.set(partition, this.options.now());
  }

  progressed(partition: string): void {
    this.running.delete(partition);
    this.failing.delete(partition);
    this.down = undefined;
    this.lastProgress = this.options.now();
  }

  failed(partition: string): void {
    this.running.delete(partition);
    this.failing.add(partition);
  }

  /**
   * How long the oldest batch in flight has run. Every call a batch makes has a deadline (60 s at
   * most), so one that runs past the recovery time is stuck: fetches that go on beside it are no
   * progress, or a stuck batch would hold its partition while health stays green.
   */
  private hungFor(now: number): number {
    let oldest = now;
    for (const since of this.running.values()) oldest = Math.min(oldest, since);
    return now - oldest;
  }

  /** the consumer stopped and will not restart by itself */
  consumerDown(code: string): void {
    this.down = code;
  }

  halted(code: string): void {
    this.halt = code;
  }

  /** Called about once a second: true when the pipeline should re-create its consumer now. */
  tick(): boolean {
    const now = this.options.now();
    // a pause of the whole process is not a pipeline stall (nor a stuck batch)
    if (now - this.lastTick > 5000) {
      this.lastProgress = now;
      for (const p of this.running.keys()) this.running.set(p, now);
    }
    this.lastTick = now;
    if (this.halt) return false;
    const idle = now - this.lastProgress;
    const stuck = this.down !== undefined || (this.owned > 0 && (idle >= this.options.recoverMs || this.hungFor(now) >= this.options.recoverMs));
    if (!stuck || now - this.lastRecovery < this.options.recoverMs) return false;
    this.lastRecovery = now;
    return true;
  }

  status(): LivenessStatus {
    if (this.halt) return { healthy: false, reason: `halted: ${this.halt}` };
    const now = this.options.now();
    const idle = now - this.lastProgress;
    const hung = this.hungFor(now);
    if (this.owned > 0 && hung >= this.options.stallMs) return { healthy: false, reason: `a batch in flight for ${Math.round(hung / 1000)} s` };
    if (this.owned > 0 && idle >= this.options.stallMs) return { healthy: false, reason: `no progress for ${Math.round(idle / 1000)} s${this.failing.size ? ` (${this.failing.size} partition(s) failing)` : ''}` };
    if (this.down && idle >= this.options.stallMs) return { healthy: false, reason: `consumer down: ${this.down}` };
    return { healthy: true };
  }
}
