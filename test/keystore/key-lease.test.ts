import { describe, expect, it, vi } from 'vitest';
import { KeyLease, logKekTransitions, type KekTransition } from '../../src/keystore/key-lease.ts';
import { KmsError, type Kms, type KmsCallOptions } from '../../src/keystore/kms/kms.ts';

const WRAPPED = new Uint8Array([1, 2, 3]);
/** what a fake KMS unwraps to: a key the tests look for in the log */
const KEY_BYTES = 'c2VjcmV0LWtleS1ieXRlcw';

/**
 * A fake KMS: `mode` answers, fails, or hangs (never settles, as a SIGSTOPped KMS). Records each
 * call's abort signal; `release()` answers the hung calls late.
 */
function fakeKms() {
  const late: ((key: Buffer) => void)[] = [];
  const k = {
    description: 'fake KMS key k1',
    mode: 'answer' as 'answer' | 'fail' | 'hang',
    calls: 0,
    signals: [] as (AbortSignal | undefined)[],
    answered: [] as Buffer[],
    wrap: async (p: Uint8Array) => p,
    unwrap(_w: Uint8Array, _c: string, o?: KmsCallOptions): Promise<Uint8Array> {
      k.calls++;
      k.signals.push(o?.signal);
      const key = Buffer.from(KEY_BYTES);
      k.answered.push(key);
      if (k.mode === 'answer') return Promise.resolve(key);
      if (k.mode === 'fail') return Promise.reject(new KmsError('KMS_UNAVAILABLE', 'fake KMS down'));
      return new Promise((resolve) => late.push(() => resolve(key)));
    },
    release: () => late.splice(0).forEach((answer) => answer(Buffer.alloc(0))),
  };
  return k satisfies Kms;
}

function lease(kms: Kms, now: () => number, extra: Partial<ConstructorParameters<typeof KeyLease>[0]> = {}) {
  const l = new KeyLease({ kms, wrapped: () => WRAPPED, ttlMs: 10_000, now, ...extra });
  const seen: KekTransition[] = [];
  l.watch((t) => seen.push(t));
  return { l, seen };
}

describe('KeyLease: each renewal bounded by its interval against a hung KMS', () => {
  it('a renewal against a KMS that never answers fails within attemptTimeoutMs, its call aborted; a late answer is wiped', async () => {
    const kms = fakeKms();
    kms.mode = 'hang';
    const { l } = lease(kms, Date.now, { attemptTimeoutMs: 100 });
    const started = performance.now();
    expect(await l.renew()).toBe(false);
    const took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(90);
    expect(took).toBeLessThan(1_000);
    expect(kms.signals[0]?.aborted).toBe(true);
    kms.release();
    await new Promise((r) => setImmediate(r));
    expect(kms.answered[0]!.every((b) => b === 0)).toBe(true);
  });

  it("the attempt bound defaults to the retry interval (1 s), not the KMS client's timeouts and retries", async () => {
    const kms = fakeKms();
    kms.mode = 'hang';
    const { l } = lease(kms, Date.now, { retryEveryMs: 150 });
    const started = performance.now();
    expect(await l.renew()).toBe(false);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(kms.signals[0]?.aborted).toBe(true);
  });

  it('while the KMS hangs, a renewal starts every retryEveryMs (each bounded by it), not one per hung call', async () => {
    // on a fake clock: a second of hung KMS is counted exactly, with no second of waiting
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance', 'Date'] });
    try {
      const kms = fakeKms();
      const { l } = lease(kms, Date.now, { renewEveryMs: 20, retryEveryMs: 100 });
      l.start();
      await vi.advanceTimersByTimeAsync(60);
      expect(kms.calls).toBeGreaterThanOrEqual(2);
      kms.mode = 'hang';
      const from = kms.calls;
      await vi.advanceTimersByTimeAsync(1_000);
      l.stop();
      kms.release();
      // one attempt per 100 ms of a second, each cut off by its bound; a renewal that waited on each hung call would make 1
      expect(kms.calls - from).toBeGreaterThanOrEqual(9);
      expect(kms.calls - from).toBeLessThanOrEqual(11);
      expect(kms.signals.slice(from, -1).every((s) => s?.aborted === true)).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("KeyLease: every change of the KEK's state told once", () => {
  it('answering → silent (keys still usable, once however many renewals fail) → lapsed (once) → answering (once)', async () => {
    const kms = fakeKms();
    let now = 1_000;
    const { l, seen } = lease(kms, () => now);
    expect(await l.renew()).toBe(true);
    expect(seen).toEqual([]);
    kms.mode = 'fail';
    now += 2_000;
    await l.renew();
    await l.renew();
    expect(seen).toEqual([{ state: 'silent', kek: 'fake KMS key k1', reason: 'KMS_UNAVAILABLE', usableForMs: 8_000 }]);
    l.check(); // still usable
    now += 9_000;
    await l.renew();
    await l.renew();
    expect(() => l.check()).toThrow(expect.objectContaining({ code: 'KMS_UNAVAILABLE' }));
    expect(seen.map((t) => t.state)).toEqual(['silent', 'lapsed']);
    expect(seen[1]).toEqual({ state: 'lapsed', kek: 'fake KMS key k1', reason: 'KMS_UNAVAILABLE' });
    kms.mode = 'answer';
    await l.renew();
    await l.renew();
    l.check();
    expect(seen.map((t) => t.state)).toEqual(['silent', 'lapsed', 'answering']);
  });

  it('a KMS back before the lease ran out: silent → answering, never lapsed', async () => {
    const kms = fakeKms();
    let now = 0;
    const { l, seen } = lease(kms, () => now);
    kms.mode = 'fail';
    now += 3_000;
    await l.renew();
    kms.mode = 'answer';
    now += 1_000;
    await l.renew();
    expect(seen.map((t) => t.state)).toEqual(['silent', 'answering']);
  });

  it('a call refused after the lifetime, before the hung renewal returns, says lapsed once', async () => {
    const kms = fakeKms();
    let now = 0;
    const { l, seen } = lease(kms, () => now);
    now += 11_000;
    expect(() => l.check()).toThrow(expect.objectContaining({ code: 'KMS_UNAVAILABLE' }));
    expect(() => l.check()).toThrow(expect.objectContaining({ code: 'KMS_UNAVAILABLE' }));
    kms.mode = 'fail';
    await l.renew();
    expect(seen.map((t) => t.state)).toEqual(['lapsed']);
  });

  it('logKekTransitions: one line per change — warn, error, warn — naming the KEK and a code, never key bytes', async () => {
    const kms = fakeKms();
    let now = 0;
    const { l } = lease(kms, () => now);
    const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
    logKekTransitions(l, { warn: (obj, msg) => lines.push({ level: 'warn', obj, msg }), error: (obj, msg) => lines.push({ level: 'error', obj, msg }) });
    logKekTransitions(undefined, { warn: () => expect.unreachable(), error: () => expect.unreachable() });
    kms.mode = 'fail';
    for (const step of [1_000, 1_000, 9_000, 1_000]) {
      now += step;
      await l.renew();
    }
    kms.mode = 'answer';
    await l.renew();
    await l.renew();
    expect(lines.map((x) => x.level)).toEqual(['warn', 'error', 'warn']);
    expect(lines[0]!.obj).toEqual({ kek: 'fake KMS key k1', code: 'KMS_UNAVAILABLE', keysUsableForS: 9 });
    expect(lines[1]!.obj).toEqual({ kek: 'fake KMS key k1', code: 'KMS_UNAVAILABLE', reason: 'KMS_UNAVAILABLE' });
    expect(lines[2]!.msg).toMatch(/answers again/);
    expect(JSON.stringify(lines)).not.toContain(KEY_BYTES);
  });
});
