import type { SubjectKey } from './subject-store.ts';

/**
 * A bounded LRU of unwrapped subject-key handles by subject id (a hit costs no keyed hash): a Map
 * in use order, the least recently used dropped past `capacity`. An erased subject is dropped at
 * once by its reference (dropRef), which is all an erasure notice names.
 */
export class HandleCache {
  private readonly entries = new Map<string, SubjectKey>();
  private readonly ids = new Map<string, string>();
  readonly capacity: number;

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 0) throw new RangeError('the cache capacity is a whole number ≥ 0');
    this.capacity = capacity;
  }

  get(id: string): SubjectKey | undefined {
    const key = this.entries.get(id);
    if (key === undefined) return undefined;
    this.entries.delete(id);
    this.entries.set(id, key);
    return key;
  }

  set(id: string, key: SubjectKey): void {
    if (this.capacity === 0) return;
    this.entries.delete(id);
    this.entries.set(id, key);
    this.ids.set(key.ref, id);
    if (this.entries.size > this.capacity) {
      const [oldest, evicted] = this.entries.entries().next().value!;
      this.entries.delete(oldest);
      if (this.ids.get(evicted.ref) === oldest) this.ids.delete(evicted.ref);
    }
  }

  dropRef(ref: string): void {
    const id = this.ids.get(ref);
    if (id === undefined) return;
    this.ids.delete(ref);
    this.entries.delete(id);
  }

  clear(): void {
    this.entries.clear();
    this.ids.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
