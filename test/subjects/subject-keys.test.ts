import { afterEach, describe, expect, it } from 'vitest';
import { ensureSubjectKeys, SubjectKeyWrapper, wrappedKeyId } from '../../src/keystore/subject-key-wrapper.ts';
import { refHex } from '../../src/subjects/subject-id.ts';
import { SubjectKeys } from '../../src/subjects/subject-keys.ts';
import { applyEvent, erasureGeneration, type SubjectState } from '../../src/subjects/subject-state.ts';
import type { SubjectBackend } from '../../src/subjects/subject-store.ts';
import { cleanup, keyHex, keystoreIn, tempDir } from './helpers.ts';

afterEach(cleanup);

/** An in-memory adapter: states resolved by subject-state.ts; `beforeCreate` lets a test write another process's key first. */
class FakeBackend implements SubjectBackend {
  readonly description = 'fake';
  states = new Map<string, SubjectState>();
  creates = 0;
  settled = 0;
  fresh_ = true;
  beforeCreate?: (ref: Buffer, gen: number) => void;
  private listeners: ((ref: Buffer, kind: 'created' | 'erased', gen: number) => void)[] = [];
  async fresh() {
    if (!this.fresh_) throw new Error('stale');
  }
  cacheFresh() {
    return this.fresh_;
  }
  read(ref: Buffer) {
    return this.states.get(refHex(ref));
  }
  apply(ref: Buffer, event: Parameters<typeof applyEvent>[1]) {
    const r = applyEvent(this.read(ref), event, wrappedKeyId);
    this.states.set(refHex(ref), r.state);
    if (r.change) for (const l of this.listeners) l(ref, r.change, r.state.gen);
    return r;
  }
  async create(ref: Buffer, gen: number, wrapped: Buffer, at: number) {
    this.creates++;
    this.beforeCreate?.(ref, gen);
    const r = this.apply(ref, { kind: 'key', gen, wrapped, record: `mine-${this.creates}`, at });
    return { state: r.state, won: r.change === 'created' };
  }
  async erase(ref: Buffer, at: number) {
    return this.apply(ref, { kind: 'erased', gen: erasureGeneration(this.read(ref)), at }).state;
  }
  async settle() {
    this.settled++;
  }
  liveKeys() {
    return [...this.states].filter(([, st]) => st.live && st.wrapped).map(([hex, st]) => ({ ref: Buffer.from(hex, 'hex'), gen: st.gen, wrapped: st.wrapped! }));
  }
  async rewrap(ref: Buffer, gen: number, wrapped: Buffer, at: number) {
    this.apply(ref, { kind: 'rewrap', gen, wrapped, at });
  }
  watch(l: (ref: Buffer, kind: 'created' | 'erased', gen: number) => void) {
    this.listeners.push(l);
  }
  health() {
    return { ready: this.fresh_ };
  }
  async close() {}
}

async function setup() {
  const keystore = await keystoreIn(await tempDir());
  await ensureSubjectKeys(keystore);
  const wrapper = new SubjectKeyWrapper(keystore);
  const backend = new FakeBackend();
  return { wrapper, backend, store: new SubjectKeys(backend, wrapper, { cacheSize: 10, now: () => 1_700_000_000_000 }) };
}

describe('SubjectKeys over an adapter (fake): creation races, the cache, erasures', () => {
  it('concurrent protects of one new subject in one process create one key', async () => {
    const { backend, store } = await setup();
    const keys = await Promise.all([store.keyFor('a'), store.keyFor('a'), store.keyFor('a')]);
    expect(backend.creates).toBe(1);
    expect(new Set(keys.map(keyHex)).size).toBe(1);
  });

  it("a creation that lost to another process adopts the winner's key", async () => {
    const { wrapper, backend, store } = await setup();
    let theirs: string | undefined;
    backend.beforeCreate = (ref, gen) => {
      const other = wrapper.create(ref, gen);
      theirs = keyHex({ ref: refHex(ref), generation: gen, key: other.key });
      backend.apply(ref, { kind: 'key', gen, wrapped: other.wrapped, record: 'theirs', at: 1 });
    };
    expect(keyHex(await store.keyFor('b'))).toBe(theirs);
  });

  it('a creation that an erasure beat answers the erased marker, and renew makes the next generation', async () => {
    const { backend, store } = await setup();
    backend.beforeCreate = (ref) => backend.apply(ref, { kind: 'erased', gen: 1, at: 5 });
    expect(await store.keyFor('c')).toMatchObject({ erased: true, generation: 1 });
    backend.beforeCreate = undefined;
    expect(await store.keyFor('c', { onErased: 'renew' })).toMatchObject({ generation: 2 });
  });

  it('an erasure drops the cached handle, waits for the other processes (settle) and notifies', async () => {
    const { backend, store } = await setup();
    await store.keyFor('d');
    const seen: string[] = [];
    store.onChange((c) => seen.push(c.kind));
    store.onChange(() => {
      throw new Error('a failing listener');
    });
    const erasure = await store.erase('d', { by: 'x', reason: 'y' });
    expect([backend.settled, erasure.alreadyErased, erasure.erasedAt]).toEqual([1, false, new Date(1_700_000_000_000).toISOString()]);
    expect(seen).toEqual(['erased']);
    expect(await store.keyFor('d')).toMatchObject({ erased: true });
  });

  it("another process's erasure (told by the adapter) drops the handle at once", async () => {
    const { wrapper, backend, store } = await setup();
    await store.keyFor('e');
    backend.apply(wrapper.refOf('e'), { kind: 'erased', gen: 1, at: 9 });
    expect(await store.keyFor('e')).toMatchObject({ erased: true });
  });

  it('serves no cached handle while the adapter is not current', async () => {
    const { backend, store } = await setup();
    await store.keyFor('f');
    backend.fresh_ = false;
    await expect(store.keyFor('f')).rejects.toThrow('stale');
    await expect(store.existing('f')).rejects.toThrow('stale');
  });
});
