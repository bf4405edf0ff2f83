import { describe, expect, it } from 'vitest';
import type { SchemaRegistryPort } from '../../../src/stream/registry/registry-port.ts';
import { RetryingRegistry } from '../../../src/stream/registry/retrying-registry.ts';
import { StreamError } from '../../../src/stream/stream-error.ts';

/** an inner registry that fails with the given errors, in order, then answers */
function failing(errors: unknown[]): SchemaRegistryPort & { calls: number } {
  const r = {
    calls: 0,
    async schemaById(id: number) {
      const e = errors[r.calls++];
      if (e) throw e;
      return `schema ${id}`;
    },
    async register() {
      const e = errors[r.calls++];
      if (e) throw e;
      return 5;
    },
  };
  return r;
}

const unavailable = () => new StreamError('REGISTRY_UNAVAILABLE', 'down');

describe('RetryingRegistry', () => {
  it('retries retriable errors with exponential backoff, capped', async () => {
    const inner = failing([unavailable(), unavailable(), unavailable(), unavailable()]);
    const sleeps: number[] = [];
    const r = new RetryingRegistry(inner, { attempts: 6, baseDelayMs: 100, maxDelayMs: 500, sleep: async (ms) => void sleeps.push(ms) });
    expect(await r.schemaById(3)).toBe('schema 3');
    expect(inner.calls).toBe(5);
    expect(sleeps).toEqual([100, 200, 400, 500]);
  });

  it('gives up after the attempts, with the last (still retriable) error', async () => {
    const last = unavailable();
    const inner = failing([unavailable(), unavailable(), last]);
    const sleeps: number[] = [];
    const r = new RetryingRegistry(inner, { attempts: 3, baseDelayMs: 10, sleep: async (ms) => void sleeps.push(ms) });
    await expect(r.register('s-value', '"string"')).rejects.toBe(last);
    expect(inner.calls).toBe(3);
    expect(sleeps).toEqual([10, 20]);
  });

  it('passes non-retriable errors and other failures through at once', async () => {
    for (const error of [new StreamError('SCHEMA_UNKNOWN', 'no such id'), new TypeError('a bug')]) {
      const inner = failing([error]);
      const sleeps: number[] = [];
      const r = new RetryingRegistry(inner, { sleep: async (ms) => void sleeps.push(ms) });
      await expect(r.schemaById(1)).rejects.toBe(error);
      expect([inner.calls, sleeps]).toEqual([1, []]);
    }
  });

  it('waits for real by default', async () => {
    const r = new RetryingRegistry(failing([unavailable()]), { baseDelayMs: 20 });
    const started = Date.now();
    expect(await r.register('s', 'x')).toBe(5);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
  });
});
