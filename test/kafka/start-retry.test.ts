import { describe, expect, it } from 'vitest';
import { KafkaJSConnectionError, KafkaJSNonRetriableError, KafkaJSNumberOfRetriesExceeded } from 'kafkajs';
import { isTransientKafkaFailure, openWithRetry } from '../../src/kafka/start-retry.ts';

describe('openWithRetry: a process started while its broker restarts', () => {
  it('tries again after transient failures (a refused connection, retries given up on one) until it opens', async () => {
    const failures: Error[] = [
      new KafkaJSConnectionError('Connection error: connect ECONNREFUSED'),
      new KafkaJSNumberOfRetriesExceeded(new KafkaJSConnectionError('refused'), { retryCount: 5, retryTime: 100 }),
    ];
    let opened = 0;
    let resets = 0;
    const waits: number[] = [];
    await openWithRetry(
      async () => {
        const next = failures.shift();
        if (next) throw next;
        opened++;
      },
      { timeoutMs: 10_000, reset: async () => void resets++, onRetry: (_, inMs) => waits.push(inMs) },
    );
    expect({ opened, resets, waits }).toEqual({ opened: 1, resets: 2, waits: [500, 1000] });
  });

  it('throws at once what will not pass by itself, and a transient failure past the deadline', async () => {
    const refused = new KafkaJSNonRetriableError('Topic authorization failed');
    await expect(
      openWithRetry(
        async () => {
          throw refused;
        },
        { timeoutMs: 10_000, reset: async () => undefined, onRetry: () => undefined },
      ),
    ).rejects.toBe(refused);
    let calls = 0;
    const started = Date.now();
    await expect(
      openWithRetry(
        async () => {
          calls++;
          throw new KafkaJSConnectionError('refused');
        },
        { timeoutMs: 1_200, reset: async () => undefined, onRetry: () => undefined },
      ),
    ).rejects.toThrow('refused');
    expect(calls).toBe(2); // at 0 and 0.5 s; the next wait (1 s) would pass the deadline
    expect(Date.now() - started).toBeLessThan(1_200);
    expect(isTransientKafkaFailure(new Error('plain'))).toBe(false);
  });

  it('stops trying once the process is stopping', async () => {
    let calls = 0;
    await expect(
      openWithRetry(
        async () => {
          calls++;
          throw new KafkaJSConnectionError('refused');
        },
        { timeoutMs: 10_000, reset: async () => undefined, onRetry: () => undefined, stopped: () => calls >= 1 },
      ),
    ).rejects.toThrow('refused');
    expect(calls).toBe(1);
  });
});
