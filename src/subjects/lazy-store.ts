import type { ErasedSubject, Erasure, KeyForOptions, SubjectChange, SubjectKey, SubjectKeyStore, SubjectStatus } from './subject-store.ts';

/**
 * The subject-key store opened on first use: a service whose configuration scopes no key to the
 * subject never creates `subjects.db`, the key set's subject keys or the subject-key topic, and
 * never follows that topic. An open that fails is retried by the next call (it is not kept).
 */
export class LazySubjectKeyStore implements SubjectKeyStore {
  readonly description: string;
  private readonly open: () => Promise<SubjectKeyStore>;
  private opening: Promise<SubjectKeyStore> | undefined;
  private opened: SubjectKeyStore | undefined;
  private closed = false;
  private readonly listeners = new Set<(change: SubjectChange) => void>();

  constructor(description: string, open: () => Promise<SubjectKeyStore>) {
    this.description = description;
    this.open = open;
  }

  async keyFor(subjectId: string, options?: KeyForOptions): Promise<SubjectKey | ErasedSubject> {
    return (await this.store()).keyFor(subjectId, options);
  }

  cached(subjectId: string): SubjectKey | undefined {
    return this.opened?.cached(subjectId);
  }

  async existing(subjectId: string, generation?: number): Promise<SubjectKey | ErasedSubject | undefined> {
    return (await this.store()).existing(subjectId, generation);
  }

  async erase(subjectId: string, by: { by: string; reason: string }): Promise<Erasure> {
    return (await this.store()).erase(subjectId, by);
  }

  async eraseMany(subjectIds: readonly string[], by: { by: string; reason: string }): Promise<Erasure[]> {
    return (await this.store()).eraseMany(subjectIds, by);
  }

  async rewrapAll(): Promise<{ rewrapped: number; live: number; versions: number[] }> {
    return (await this.store()).rewrapAll();
  }

  async status(subjectId: string): Promise<SubjectStatus> {
    return (await this.store()).status(subjectId);
  }

  onChange(listener: (change: SubjectChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  health(): { ready: boolean; reason?: string } {
    return this.opened ? this.opened.health() : { ready: true };
  }

  /** whether the store was opened (a scoped key or an erasure needed it) */
  get isOpen(): boolean {
    return this.opened !== undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    const store = this.opened ?? (await this.opening?.catch(() => undefined));
    await store?.close();
  }

  private store(): Promise<SubjectKeyStore> {
    if (this.opened) return Promise.resolve(this.opened);
    if (this.closed) return Promise.reject(new Error('the subject-key store is closed'));
    this.opening ??= this.open().then(
      (store) => {
        this.opened = store;
        store.onChange((change) => {
          for (const listener of this.listeners) {
            try {
              listener(change);
            } catch {
              // a listener's failure is its own
            }
          }
        });
        return store;
      },
      (e: unknown) => {
        this.opening = undefined;
        throw e;
      },
    );
    return this.opening;
  }
}
