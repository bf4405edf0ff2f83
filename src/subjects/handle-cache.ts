import type { SubjectKey } from './subject-store.ts';

/**
 * A bounded LRU of unwrapped subject-key handles by reference (hex): a Map in use order, the
 * least recently used dropped past `capacity`. An erased subject is dropped at once (drop).
 */
export class HandleCache {
  private readonly entries = new Map<string, SubjectKey>();
  readonly capacity: number;

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 0) throw new RangeError('the cache capacity is a whole number ≥ 0');
    this.capacity = capacity;
  }

  get(ref: string): SubjectKey | undefined {
    const key = this.entries.get(ref);
    if (key === undefined) return undefined;
    this.entries.delete(ref);
    this.entries.set(ref, key);
    return key;
  }

  set(ref: string, key: SubjectKey): void {
    if (this.capacity === 0) return;
    this.entries.delete(ref);
    this.entries.set(ref, key);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  drop(ref: string): void {
    this.entries.delete(ref);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
