import { describe, expect, it } from 'vitest';
import { VeilClientError } from '../../src/client/index.ts';
import { backoffMs, parseRetryAfter, retryPolicy, withRetry } from '../../src/client/retry.ts';
import { fakeClock } from './fake-veil.ts';

const retriable = () => new VeilClientError('x', { code: 'RATE_LIMITED', retriable: true, status: 429 });

describe('retry', () => {
  it('backs off exponentially with full jitter, capped, Retry-After as a floor', () => {
    const at = (r: number) => retryPolicy({ baseDelayMs: 100, maxDelayMs: 1000, random: () => r });
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffMs(at(0.999), n, undefined))).toEqual([99, 199, 399, 799, 999, 999]);
    expect(backoffMs(at(0), 3, undefined)).toBe(0);
    expect(backoffMs(at(0.5), 0, 3000)).toBe(3000);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 00:00:10 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  it('counts attempts and stops at the first non-retriable error', async () => {
    const clock = fakeClock();
    let n = 0;
    const policy = retryPolicy({ maxAttempts: 5, random: () => 1 - Number.EPSILON });
    const result = await withRetry(policy, clock, undefined, async () => {
      if (++n < 3) throw retriable();
      return 'done';
    });
    expect(result).toBe('done');
    expect(clock.sleeps).toEqual([99, 199]);
    n = 0;
    await expect(
      withRetry(policy, clock, undefined, async () => {
        n++;
        throw new VeilClientError('x', { code: 'ACTION_NOT_GRANTED', retriable: false, status: 403 });
      }),
    ).rejects.toMatchObject({ code: 'ACTION_NOT_GRANTED' });
    expect(n).toBe(1);
  });

  it('a thrown non-VeilClientError counts as a retriable network error', async () => {
    let n = 0;
    await expect(
      withRetry(retryPolicy({ maxAttempts: 2 }), fakeClock(), undefined, async () => {
        n++;
        throw new TypeError('fetch failed');
      }),
    ).rejects.toMatchObject({ code: 'NETWORK_ERROR', retriable: true });
    expect(n).toBe(2);
  });

  it('gives up when the next wait would end past the deadline', async () => {
    const clock = fakeClock();
    let n = 0;
    await expect(
      withRetry(retryPolicy({ maxAttempts: 100, baseDelayMs: 1000, maxDelayMs: 1000, deadlineMs: 3500, random: () => 0.999 }), clock, undefined, async () => {
        n++;
        throw retriable();
      }),
    ).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    expect(n).toBe(4);
    expect(clock.sleeps).toEqual([999, 999, 999]);
  });
});
