import type { SubjectKeyring } from '../engine/index.ts';
import type { ErasedSubject, SubjectKey, SubjectKeyStore } from './subject-store.ts';

/** A data subject a call names, and whether a sequence of it runs forward (protect: the key is created when absent). */
export interface SubjectNeed {
  readonly id: string;
  readonly create: boolean;
}

/**
 * The keys of the subjects a call names, fetched from the store before the engine runs (the store
 * is asynchronous, the engine not). A subject some request protects: its key, created on first use,
 * or the erased marker — or, when the configuration lets returning persons protect again
 * (`subjects.returning: new-key`), a new key of the next generation. A subject only unprotected:
 * its key as it is (never created), the erased marker, or none.
 */
export async function fetchSubjectKeys(
  store: SubjectKeyStore,
  needs: Iterable<SubjectNeed | undefined>,
  returning: 'new-key' | 'refuse',
): Promise<SubjectKeyring | undefined> {
  const ring = new Map<string, SubjectKey | ErasedSubject | undefined>();
  // a cached handle is a live key: whether the call protects does not change it
  const wanted = new Map<string, boolean>();
  for (const need of needs) {
    if (!need || ring.has(need.id)) continue;
    const hit = store.cached(need.id);
    if (hit) ring.set(need.id, hit);
    else wanted.set(need.id, (wanted.get(need.id) ?? false) || need.create);
  }
  if (ring.size === 0 && wanted.size === 0) return undefined;
  const onErased = returning === 'new-key' ? 'renew' : 'refuse';
  await Promise.all(
    [...wanted].map(async ([id, create]) => {
      ring.set(id, create ? await store.keyFor(id, { onErased }) : await store.existing(id));
    }),
  );
  return ring;
}

/** The `subjectKeys` of a GuardedTransform (src/audit) reading `store`; none without a store (scoped calls then fail with KEY_UNAVAILABLE). */
export function subjectKeysOf(store: SubjectKeyStore | undefined): {
  subjectKeys?: (needs: Iterable<SubjectNeed | undefined>, returning: 'new-key' | 'refuse') => Promise<SubjectKeyring | undefined>;
} {
  return store ? { subjectKeys: (needs, returning) => fetchSubjectKeys(store, needs, returning) } : {};
}
