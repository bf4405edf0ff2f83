import { describe, expect, it } from 'vitest';
import type { SchemaRegistryPort } from '../../../src/stream/registry/registry-port.ts';
import { CachingRegistry } from '../../../src/stream/registry/caching-registry.ts';
import { StreamError } from '../../../src/stream/stream-error.ts';

/** an inner registry whose answers the test releases by hand */
function gated() {
  const calls: string[] = [];
  const pending: { resolve: (v: unknown) => void; reject: (e: unknown) => void }[] = [];
  const wait = <T>() => new Promise<T>((resolve, reject) => pending.push({ resolve: resolve as (v: unknown) => void, reject }));
  const inner: SchemaRegistryPort = {
    schemaById: (id) => (calls.push(`id:${id}`), wait<string>()),
    register: (subject, schema) => (calls.push(`reg:${subject}:${schema}`), wait<number>()),
  };
  return { inner, calls, pending };
}

describe('CachingRegistry', () => {
  it('shares one request among concurrent identical lookups, then answers from the cache', async () => {
    const { inner, calls, pending } = gated();
    const cache = new CachingRegistry(inner);
    const waiting = [cache.schemaById(7), cache.schemaById(7), cache.schemaById(7)];
    expect(calls).toEqual(['id:7']);
    pending[0]!.resolve('{"type":"string"}');
    expect(await Promise.all(waiting)).toEqual(Array(3).fill('{"type":"string"}'));
    expect(await cache.schemaById(7)).toBe('{"type":"string"}');
    expect(calls).toEqual(['id:7']);
  });

  it('keys registrations by subject and schema text', async () => {
    const { inner, calls, pending } = gated();
    const cache = new CachingRegistry(inner);
    const a = [cache.register('s-value', 'A'), cache.register('s-value', 'A')];
    const b = cache.register('s-value', 'B');
    const c = cache.register('t-value', 'A');
    expect(calls).toEqual(['reg:s-value:A', 'reg:s-value:B', 'reg:t-value:A']);
    pending.forEach((p, i) => p.resolve(i + 1));
    expect(await Promise.all([...a, b, c])).toEqual([1, 1, 2, 3]);
    expect(await cache.register('s-value', 'A')).toBe(1);
    expect(calls).toHaveLength(3);
  });

  it('does not cache failures: every waiter sees the failure, the next lookup asks again', async () => {
    const { inner, calls, pending } = gated();
    const cache = new CachingRegistry(inner);
    const waiting = [cache.schemaById(1), cache.schemaById(1)];
    pending[0]!.reject(new StreamError('REGISTRY_UNAVAILABLE', 'down'));
    for (const w of waiting) await expect(w).rejects.toMatchObject({ code: 'REGISTRY_UNAVAILABLE' });
    const again = cache.schemaById(1);
    expect(calls).toEqual(['id:1', 'id:1']);
    pending[1]!.resolve('"int"');
    expect(await again).toBe('"int"');
  });
});
