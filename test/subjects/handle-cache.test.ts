import { describe, expect, it } from 'vitest';
import { SecretKey } from '../../src/engine/index.ts';
import { HandleCache } from '../../src/subjects/handle-cache.ts';

const handle = (ref: string) => ({ ref, generation: 1, key: SecretKey.fromBytes(new Uint8Array(32)) });

describe('the handle cache: bounded LRU', () => {
  it('keeps at most its capacity, dropping the least recently used', () => {
    const cache = new HandleCache(2);
    cache.set('a', handle('a'));
    cache.set('b', handle('b'));
    cache.get('a');
    cache.set('c', handle('c'));
    expect([cache.size, cache.get('a')?.ref, cache.get('b'), cache.get('c')?.ref]).toEqual([2, 'a', undefined, 'c']);
  });

  it('drops an erased subject; capacity 0 keeps nothing', () => {
    const cache = new HandleCache(5);
    cache.set('a', handle('a'));
    cache.dropRef('a');
    expect(cache.get('a')).toBeUndefined();
    const none = new HandleCache(0);
    none.set('a', handle('a'));
    expect(none.size).toBe(0);
    expect(() => new HandleCache(-1)).toThrow(RangeError);
  });
});
