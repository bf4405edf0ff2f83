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
 * while no partition has a failing batch (an idle pipeline is healthy). A pipeline that owns
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
    this.down = undefined;
  }

  fetched(): void {
    this.down = undefined;
    if (this.failing.size === 0) this.lastProgress = this.options.now();
  }

  progressed(partition: string): void {
    this.failing.delete(partition);
    this.down = undefined;
    this.lastProgress = this.options.now();
  }

  failed(partition: string): void {
    this.failing.add(partition);
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
    // a pause of the whole process is not a pipeline stall
    if (now - this.lastTick > 5000) this.lastProgress = now;
    this.lastTick = now;
    if (this.halt) return false;
    const idle = now - this.lastProgress;
    const stuck = this.down !== undefined || (this.owned > 0 && idle >= this.options.recoverMs);
    if (!stuck || now - this.lastRecovery < this.options.recoverMs) return false;
    this.lastRecovery = now;
    return true;
  }

  status(): LivenessStatus {
    if (this.halt) return { healthy: false, reason: `halted: ${this.halt}` };
    const idle = this.options.now() - this.lastProgress;
    if (this.owned > 0 && idle >= this.options.stallMs) return { healthy: false, reason: `no progress for ${Math.round(idle / 1000)} s${this.failing.size ? ` (${this.failing.size} partition(s) failing)` : ''}` };
    if (this.down && idle >= this.options.stallMs) return { healthy: false, reason: `consumer down: ${this.down}` };
    return { healthy: true };
  }
}
