import { wrapVersion, type SubjectKeyWrapper } from '../keystore/index.ts';
import { SubjectsError } from './errors.ts';
import { HandleCache } from './handle-cache.ts';
import { assertSubjectId, refHex } from './subject-id.ts';
import { isErased, type SubjectState } from './subject-state.ts';
import { mapLimited } from './map-limited.ts';
import type { ErasedSubject, Erasure, KeyForOptions, SubjectBackend, SubjectChange, SubjectKey, SubjectKeyStore, SubjectStatus } from './subject-store.ts';

export interface SubjectKeysOptions {
  /** unwrapped handles kept (LRU); default 100,000 */
  cacheSize?: number;
  now?: () => number;
}

/** erasures of one batch in flight at once: each is a write and its read-back */
const ERASE_CONCURRENCY = 32;

/** The store over an adapter: ids to references, the handle cache, creation races and erasures. */
export class SubjectKeys implements SubjectKeyStore {
  readonly description: string;
  private readonly backend: SubjectBackend;
  private readonly wrapper: SubjectKeyWrapper;
  private readonly cache: HandleCache;
  private readonly now: () => number;
  private readonly listeners = new Set<(change: SubjectChange) => void>();
  private readonly inflight = new Map<string, Promise<SubjectKey | ErasedSubject>>();

  constructor(backend: SubjectBackend, wrapper: SubjectKeyWrapper, options: SubjectKeysOptions = {}) {
    this.backend = backend;
    this.wrapper = wrapper;
    this.description = backend.description;
    this.cache = new HandleCache(options.cacheSize ?? 100_000);
    this.now = options.now ?? Date.now;
    backend.watch((ref, kind, generation) => {
      const hex = refHex(ref);
      if (kind === 'erased') this.cache.dropRef(hex);
      for (const listener of this.listeners) {
        try {
          listener({ kind, ref: hex, generation });
        } catch {
          // a listener's failure is its own
        }
      }
    });
  }

  cached(subjectId: string): SubjectKey | undefined {
    return this.backend.cacheFresh() ? this.cache.get(subjectId) : undefined;
  }

  async keyFor(subjectId: string, options: KeyForOptions = {}): Promise<SubjectKey | ErasedSubject> {
    const cached = this.cached(subjectId);
    if (cached) return cached;
    assertSubjectId(subjectId);
    const ref = this.wrapper.refOf(subjectId);
    const hex = refHex(ref);
    const key = `${hex}/${options.onErased ?? 'refuse'}`;
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.resolve(subjectId, ref, hex, options.onErased ?? 'refuse').finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    return pending;
  }

  async existing(subjectId: string, generation?: number): Promise<SubjectKey | ErasedSubject | undefined> {
    if (generation !== undefined && (!Number.isSafeInteger(generation) || generation < 1)) throw new RangeError('a generation is a whole number ≥ 1');
    if (this.backend.cacheFresh()) {
      const cached = this.cache.get(subjectId);
      if (cached && (generation === undefined || cached.generation === generation)) return cached;
    }
    assertSubjectId(subjectId);
    const ref = this.wrapper.refOf(subjectId);
    const hex = refHex(ref);
    await this.backend.fresh();
    const state = this.backend.read(ref);
    if (!state || (generation ?? 0) > state.gen) return undefined;
    if (state.live && (generation === undefined || generation === state.gen)) return this.adopt(subjectId, ref, hex, state);
    if (generation !== undefined) return erasedMarker(hex, generation, state);
    return isErased(state) ? erasedMarker(hex, state.gen, state) : undefined;
  }

  async erase(subjectId: string, by: { by: string; reason: string }): Promise<Erasure> {
    return (await this.eraseMany([subjectId], by))[0]!;
  }

  /**
   * Erases many subjects at once: each as erase() does, ERASE_CONCURRENCY writes in flight, and
   * one wait for the staleness bound after the last — so a batch of thousands costs its writes,
   * not a bound per subject. A subject named twice is erased once; one erased before is not written.
   */
  async eraseMany(subjectIds: readonly string[], by: { by: string; reason: string }): Promise<Erasure[]> {
    for (const id of subjectIds) assertSubjectId(id);
    await this.backend.fresh();
    const byRef = new Map<string, Promise<Erasure>>();
    let erased = false;
    const eraseOne = async (ref: Buffer, hex: string): Promise<Erasure> => {
      const before = this.backend.read(ref);
      if (isErased(before)) return erasure(hex, before!, by, true);
      const after = await this.backend.erase(ref, this.now());
      this.cache.dropRef(hex);
      erased = true;
      return erasure(hex, after, by, false);
    };
    const results = await mapLimited(subjectIds, ERASE_CONCURRENCY, (id) => {
      const ref = this.wrapper.refOf(id);
      const hex = refHex(ref);
      let pending = byRef.get(hex);
      if (!pending) byRef.set(hex, (pending = eraseOne(ref, hex)));
      return pending;
    });
    if (erased) await this.backend.settle();
    return results;
  }

  async rewrapAll(): Promise<{ rewrapped: number; live: number; versions: number[] }> {
    await this.backend.fresh();
    const live = [...this.backend.liveKeys()];
    let rewrapped = 0;
    await mapLimited(live, ERASE_CONCURRENCY, async ({ ref, gen, wrapped }) => {
      const anew = this.wrapper.rewrapped(ref, gen, wrapped);
      if (!anew) return;
      await this.backend.rewrap(ref, gen, anew, this.now());
      rewrapped++;
    });
    if (rewrapped) await this.backend.settle();
    // what live keys name now, read again: a key created meanwhile by a host that had not seen the rotation shows here
    const versions = [...new Set([...this.backend.liveKeys()].map((k) => wrapVersion(k.wrapped)))].sort((a, b) => a - b);
    return { rewrapped, live: live.length, versions };
  }

  async status(subjectId: string): Promise<SubjectStatus> {
    assertSubjectId(subjectId);
    const ref = this.wrapper.refOf(subjectId);
    const subject = refHex(ref);
    await this.backend.fresh();
    const state = this.backend.read(ref);
    if (state?.live) return { state: 'exists', subject, generation: state.gen, createdAt: iso(state.at) };
    if (isErased(state)) return { state: 'erased', subject, generation: state!.gen, erasedAt: iso(state!.at) };
    return { state: 'unknown', subject };
  }

  onChange(listener: (change: SubjectChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  health(): { ready: boolean; reason?: string } {
    return this.backend.health();
  }

  async close(): Promise<void> {
    this.cache.clear();
    await this.backend.close();
  }

  /** Live key: adopted; erased: the marker (or the next generation with `renew`); none: created, first write wins. */
  private async resolve(subjectId: string, ref: Buffer, hex: string, onErased: 'refuse' | 'renew'): Promise<SubjectKey | ErasedSubject> {
    for (let attempt = 1; attempt <= 5; attempt++) {
      await this.backend.fresh();
      const state = this.backend.read(ref);
      if (state?.live) return this.adopt(subjectId, ref, hex, state);
      if (isErased(state) && onErased === 'refuse') return erasedMarker(hex, state!.gen, state!);
      const gen = (state?.gen ?? 0) + 1;
      const created = this.wrapper.create(ref, gen);
      const result = await this.backend.create(ref, gen, created.wrapped, this.now());
      if (result.won) {
        const key: SubjectKey = { ref: hex, generation: gen, key: created.key };
        this.cache.set(subjectId, key);
        return key;
      }
      // lost: another process's key for this generation won (adopted next round), or it was erased
      if (result.state.live) return this.adopt(subjectId, ref, hex, result.state);
      if (onErased === 'refuse' && isErased(result.state)) return erasedMarker(hex, result.state.gen, result.state);
    }
    throw new SubjectsError(
      'SUBJECT_STORE_UNAVAILABLE',
      'a subject key lost 5 creation races in a row (the subject is being erased and renewed elsewhere): try again',
    );
  }

  private adopt(subjectId: string, ref: Buffer, hex: string, state: SubjectState): SubjectKey {
    const cached = this.cache.get(subjectId);
    if (cached && cached.generation === state.gen) return cached;
    const key: SubjectKey = { ref: hex, generation: state.gen, key: this.wrapper.unwrap(ref, state.gen, state.wrapped!) };
    this.cache.set(subjectId, key);
    return key;
  }
}

const iso = (ms: number): string => new Date(ms).toISOString();

function erasedMarker(ref: string, generation: number, state: SubjectState): ErasedSubject {
  return { erased: true, ref, generation, ...(generation === state.gen && !state.live ? { erasedAt: iso(state.at) } : {}) };
}

function erasure(subject: string, state: SubjectState, by: { by: string; reason: string }, alreadyErased: boolean): Erasure {
  return {
    subject,
    generation: state.gen,
    erasedAt: iso(state.at),
    by: by.by,
    reason: by.reason,
    ...(state.material ? { destroyedKey: state.material } : {}),
    alreadyErased: alreadyErased || state.live,
  };
}
