/**
 * Token buckets per key (client id, address): `rate` tokens per second up to `burst`. Memory is
 * bounded: idle full buckets are dropped when the map grows past `maxKeys`.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly rate: number;
  private readonly burst: number;
  private readonly now: () => number;
  private readonly maxKeys: number;

  constructor(options: { rate: number; burst: number; now: () => number; maxKeys?: number }) {
    this.rate = options.rate;
    this.burst = options.burst;
    this.now = options.now;
    this.maxKeys = options.maxKeys ?? 100_000;
  }

  /** Takes `cost` tokens if available; returns seconds to wait when not (0 when taken). */
  take(key: string, cost = 1): number {
    const now = this.now();
    const bucket = this.refill(key, now);
    if (bucket.tokens >= cost) {
      bucket.tokens -= cost;
      return 0;
    }
    return Math.max(0.001, (cost - bucket.tokens) / this.rate);
  }

  /** Seconds until `cost` tokens would be available, without taking any. */
  wait(key: string, cost = 1): number {
    const bucket = this.refill(key, this.now());
    return bucket.tokens >= cost ? 0 : Math.max(0.001, (cost - bucket.tokens) / this.rate);
  }

  private refill(key: string, now: number): { tokens: number; at: number } {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= this.maxKeys) this.prune(now);
      bucket = { tokens: this.burst, at: now };
      this.buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.rate);
    bucket.at = now;
    return bucket;
  }

  private prune(now: number): void {
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.rate >= this.burst) this.buckets.delete(key);
    }
    if (this.buckets.size >= this.maxKeys) this.buckets.clear();
  }
}
