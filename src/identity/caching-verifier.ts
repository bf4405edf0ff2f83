import { CLOCK_TOLERANCE_S, type BearerVerifier, type Caller } from './token-verifier.ts';

/**
 * Decorator: remembers verified tokens so a client reusing its token pays the signature check
 * once, not per call (an ES256 verification costs more than a small transform). An entry lives
 * until the token expires (with the verifier's tolerance) and at most `maxAgeMs`, so a key
 * withdrawn from an external JWKS stops being honoured soon. Failures are never cached.
 */
export class CachingVerifier implements BearerVerifier {
  private readonly cache = new Map<string, { caller: Caller; until: number }>();
  private readonly inner: BearerVerifier;
  private readonly now: () => Date;
  private readonly maxAgeMs: number;
  private readonly maxEntries: number;

  constructor(inner: BearerVerifier, options: { now: () => Date; maxAgeMs?: number; maxEntries?: number }) {
    this.inner = inner;
    this.now = options.now;
    this.maxAgeMs = options.maxAgeMs ?? 60_000;
    this.maxEntries = options.maxEntries ?? 10_000;
  }

  async verifyHeader(authorization: string | undefined): Promise<Caller> {
    const now = this.now().getTime();
    const key = authorization ?? '';
    const hit = this.cache.get(key);
    if (hit && now < hit.until) return hit.caller;
    if (hit) this.cache.delete(key);
    const caller = await this.inner.verifyHeader(authorization);
    if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, { caller, until: Math.min((caller.expiresAt + CLOCK_TOLERANCE_S) * 1000, now + this.maxAgeMs) });
    return caller;
  }
}
