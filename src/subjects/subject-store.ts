import type { SecretKey } from '../engine/index.ts';
import type { SubjectState } from './subject-state.ts';

/**
 * A data subject's key as a handle (issue 29): the reference (hex of a keyed hash of the subject
 * id, never the id), the generation (1 for the first key; a returning person after an erasure
 * gets the next one — a protected value must name it, so that a value of an erased generation
 * answers SUBJECT_ERASED rather than failing under a newer key) and the key, whose bytes only
 * the crypto modules may read. Do not keep a handle beyond the call that asked for it: ask again
 * (the cache makes it cheap) or drop it on `onChange`, so an erasure reaches it.
 */
export interface SubjectKey {
  readonly erased?: undefined;
  readonly ref: string;
  readonly generation: number;
  readonly key: SecretKey;
}

/** The marker of an erased subject (or of an erased generation of it): no key. */
export interface ErasedSubject {
  readonly erased: true;
  readonly ref: string;
  readonly generation: number;
  /** when, for the subject's newest generation (an older one's erasure time is not kept) */
  readonly erasedAt?: string;
}

/** What an erasure destroyed, for its receipt: never a key, never the subject id. */
export interface Erasure {
  /** the subject's reference: hex of HMAC-SHA256 under the key set's `veil-subjects-index` key */
  subject: string;
  generation: number;
  erasedAt: string;
  by: string;
  reason: string;
  /** SHA-256 (hex) of the wrapped key destroyed; absent when the subject had no key */
  destroyedKey?: string;
  /** the subject was erased before (the result names that erasure's time and key) */
  alreadyErased: boolean;
}

export type SubjectStatus =
  | { state: 'exists'; subject: string; generation: number; createdAt: string }
  | { state: 'erased'; subject: string; generation: number; erasedAt: string }
  | { state: 'unknown'; subject: string };

/** Told to `onChange` listeners: a reference and a generation, never the subject id. */
export interface SubjectChange {
  kind: 'created' | 'erased';
  ref: string;
  generation: number;
}

export interface KeyForOptions {
  /**
   * What a protect for an erased subject gets: `refuse` (default) the erased marker, `renew` a
   * new key of the next generation (a returning person). The caller's configuration decides.
   */
  onErased?: 'refuse' | 'renew';
}

/** The subject-key store: the local data dir (the embedded default) or a compacted Kafka topic. */
export interface SubjectKeyStore {
  readonly description: string;
  /** The subject's key, created (random, wrapped by the key set) on first use; the erased marker when erased (unless `renew`). */
  keyFor(subjectId: string, options?: KeyForOptions): Promise<SubjectKey | ErasedSubject>;
  /**
   * Never creates: the key (of `generation` when given), the erased marker when that generation
   * (or the subject) was erased, undefined when there is none.
   */
  existing(subjectId: string, generation?: number): Promise<SubjectKey | ErasedSubject | undefined>;
  /**
   * The live key keyFor() and existing() would answer from the handle cache now, without a
   * promise; undefined when the cache does not hold it or may not be served (a call then asks
   * keyFor or existing). A call naming 1,000 subjects pays a promise only for those not cached.
   */
  cached(subjectId: string): SubjectKey | undefined;
  /** Destroys the subject's key everywhere; resolves once no process of the store serves it any more. */
  erase(subjectId: string, by: { by: string; reason: string }): Promise<Erasure>;
  /** erase() for many subjects, in their order, with one wait for every process at the end (bulk erasure) */
  eraseMany(subjectIds: readonly string[], by: { by: string; reason: string }): Promise<Erasure[]>;
  /**
   * Every live subject key wrapped under the wrapping key's primary version (after its rotation):
   * how many were rewrapped, and the wrapping versions live keys still name after (none but the
   * primary when done). Resolves once every process serving the store has had to see the rewraps.
   */
  rewrapAll(): Promise<{ rewrapped: number; live: number; versions: number[] }>;
  status(subjectId: string): Promise<SubjectStatus>;
  /** Created and erased subjects, from this process and the others; returns the unsubscribe. */
  onChange(listener: (change: SubjectChange) => void): () => void;
  /** whether subject keys can be served now (health) */
  health(): { ready: boolean; reason?: string };
  close(): Promise<void>;
}

/**
 * What the store needs of an adapter (src/subjects/local-backend.ts, kafka-backend.ts): the
 * subjects' states, made fresh enough to serve, and the two writes, resolved by subject-state.ts.
 */
export interface SubjectBackend {
  readonly description: string;
  /** resolves once reads reflect every change older than the staleness bound (SUBJECT_STORE_UNAVAILABLE when they cannot) */
  fresh(): Promise<void>;
  /** whether cached handles may be served now without waiting (may catch up synchronously) */
  cacheFresh(): boolean;
  read(ref: Buffer): SubjectState | undefined;
  /** writes a key for `gen` if still free; the state that won, and whether it is this one */
  create(ref: Buffer, gen: number, wrapped: Buffer, at: number): Promise<{ state: SubjectState; won: boolean }>;
  /** erases whatever the subject has (its live key, or its next generation); the state after */
  erase(ref: Buffer, at: number): Promise<SubjectState>;
  /** resolves once every other process serving the store has had to see the erasure (or the rewrap) */
  settle(): Promise<void>;
  /** the live keys this view holds: reference, generation, wrapped bytes */
  liveKeys(): Iterable<{ ref: Buffer; gen: number; wrapped: Buffer }>;
  /** replaces the live key of `gen` by `wrapped` (the same key under a newer wrapping version); nothing when it is no longer live */
  rewrap(ref: Buffer, gen: number, wrapped: Buffer, at: number): Promise<void>;
  /** created and erased subjects, from this process and others */
  watch(listener: (ref: Buffer, kind: 'created' | 'erased', gen: number) => void): void;
  health(): { ready: boolean; reason?: string };
  close(): Promise<void>;
}
