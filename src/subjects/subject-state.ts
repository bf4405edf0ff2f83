/**
 * What the subject-key store knows of one subject, and how every change is resolved — the same
 * way by the local store (inside one SQLite transaction) and by every process following the Kafka
 * topic (in the topic's order): a small state machine over generations, monotonic, so applying a
 * record twice or late changes nothing.
 *
 * - A subject's keys are numbered: generation 1 is its first key, a returning person after an
 *   erasure gets the next one. `gen` is the highest generation used, by a key or an erasure.
 * - A key for generation g is accepted only when no key is live and g = gen + 1. The first
 *   one in the log wins; a later one for the same generation lost a race (its writer adopts the
 *   winner's key) and is a stray, as is any key for a generation already erased.
 * - An erasure of generation m ≥ the live key's drops the key (its wrapped bytes are deleted) and
 *   sets gen = m. A rewrap (the wrapping key rotated) replaces the live key's wrapped bytes, and
 *   nothing else. An erasure of an unknown subject uses generation gen + 1, so a key written for
 *   that generation concurrently, before or after it, is erased or refused alike.
 */
export interface SubjectState {
  gen: number;
  live: boolean;
  /** the live key's wrapped bytes; absent once erased */
  wrapped?: Buffer;
  /** the Kafka record key the live key was written under (local store: absent) */
  record?: string;
  /** ms since the epoch: the live key's creation, or the erasure */
  at: number;
  /** erased: the id of the wrapped key material destroyed (wrappedKeyId), absent when none existed */
  material?: string;
  /** record keys of key records that lost (tombstoned at the erasure) */
  strays: string[];
}

export type SubjectEvent =
  | { kind: 'key'; gen: number; wrapped: Buffer; record?: string; at: number }
  | { kind: 'erased'; gen: number; at: number; material?: string }
  /** the live key of `gen` wrapped anew (the wrapping key rotated): only its bytes change */
  | { kind: 'rewrap'; gen: number; wrapped: Buffer; at: number }
  /** a Kafka tombstone of a key record */
  | { kind: 'tombstone'; record: string; at: number };

export interface Applied {
  state: SubjectState;
  /** what a cache must know */
  change?: 'created' | 'erased';
  /** a key record that did not become the live key: its writer tombstones it, and so does a view that sees it after its generation was erased */
  stray?: 'lost' | 'erased-generation';
}

export const UNKNOWN: SubjectState = Object.freeze({ gen: 0, live: false, at: 0, strays: [] as string[] }) as SubjectState;

/** The next state of a subject after one event; `material` names destroyed wrapped bytes for the erasure's record. */
export function applyEvent(current: SubjectState | undefined, event: SubjectEvent, material: (wrapped: Buffer) => string): Applied {
  const state = current ?? UNKNOWN;
  switch (event.kind) {
    case 'key':
      return applyKey(state, event);
    case 'erased':
      return applyErasure(state, event, material);
    case 'rewrap':
      // only the live key of that generation: a rewrap that arrives after its erasure, or for a key that lost, changes nothing
      return state.live && state.gen === event.gen ? { state: { ...state, wrapped: event.wrapped } } : { state };
    case 'tombstone': {
      if (state.live && state.record === event.record) return applyErasure(state, { kind: 'erased', gen: state.gen, at: event.at }, material);
      return { state: { ...state, strays: state.strays.filter((s) => s !== event.record) } };
    }
  }
}

function applyKey(state: SubjectState, event: Extract<SubjectEvent, { kind: 'key' }>): Applied {
  if (state.live && event.record !== undefined && state.record === event.record) return { state };
  if (!state.live && event.gen === state.gen + 1) {
    return {
      state: { gen: event.gen, live: true, wrapped: event.wrapped, ...(event.record ? { record: event.record } : {}), at: event.at, strays: state.strays },
      change: 'created',
    };
  }
  const strays = event.record && !state.strays.includes(event.record) ? [...state.strays, event.record] : state.strays;
  const erasedGeneration = !state.live ? event.gen <= state.gen : event.gen < state.gen;
  return { state: { ...state, strays }, stray: erasedGeneration ? 'erased-generation' : 'lost' };
}

function applyErasure(state: SubjectState, event: Extract<SubjectEvent, { kind: 'erased' }>, material: (wrapped: Buffer) => string): Applied {
  if (state.live && event.gen >= state.gen) {
    const destroyed = event.material ?? (state.wrapped ? material(state.wrapped) : undefined);
    return { state: { gen: event.gen, live: false, at: event.at, ...(destroyed ? { material: destroyed } : {}), strays: state.strays }, change: 'erased' };
  }
  if (!state.live && event.gen > state.gen) {
    return {
      state: { gen: event.gen, live: false, at: event.at, ...(event.material ? { material: event.material } : {}), strays: state.strays },
      change: 'erased',
    };
  }
  return { state };
}

/** The generation an erasure of this state names: the live key's, else the next one. */
export function erasureGeneration(state: SubjectState | undefined): number {
  const s = state ?? UNKNOWN;
  return s.live ? s.gen : s.gen + 1;
}

/** Whether the subject was erased (and has no live key since). */
export const isErased = (state: SubjectState | undefined): boolean => !!state && !state.live && state.gen > 0;
