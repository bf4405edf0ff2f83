import { SUBJECT_WRAP_KEY } from '../keystore/index.ts';
import type { KeyInfo } from '../engine/index.ts';
import { SubjectsError } from './errors.ts';
import type { SubjectKeyStore } from './subject-store.ts';

/** What rotating the subject keys' wrapping key needs of the key set: LocalKeystore. */
export interface WrapKeySet {
  rotate(id: string): Promise<KeyInfo>;
  destroyOlderVersions(id: string): Promise<{ info: KeyInfo; destroyed: number[] }>;
}

export interface WrapRotation {
  /** the wrapping key's new primary version */
  version: number;
  /** living subject keys rewrapped under it */
  rewrapped: number;
  live: number;
  /** the older versions destroyed: nothing they wrapped opens under this key set any more */
  destroyed: number[];
}

/** rewrap passes before giving up: a pass after the first catches keys created meanwhile under the old version */
const PASSES = 5;

/**
 * The first half of shredding backups (issue 43, docs/erasure.md "Backups"): the wrapping key of
 * subject keys (`veil-subjects`) gets a new version; every living subject key is wrapped under it
 * anew (the same data key: nothing protected changes) and written back to the store, which every
 * host follows; once no living key names an older version, those versions are destroyed in the
 * key set. A copy of the subject-key store taken before — erased subjects and living ones alike —
 * then holds only keys wrapped under versions the key set no longer has. A host that has not yet
 * seen the new version may create a key under the old one meanwhile: each pass rewraps those too,
 * and the older versions are destroyed only when a pass finds none (else SUBJECT_STORE_UNAVAILABLE:
 * run it again).
 */
export async function rotateWrappingKey(keys: WrapKeySet, store: SubjectKeyStore): Promise<WrapRotation> {
  const { primary } = await keys.rotate(SUBJECT_WRAP_KEY);
  let rewrapped = 0;
  let live = 0;
  for (let pass = 1; pass <= PASSES; pass++) {
    const result = await store.rewrapAll();
    rewrapped += result.rewrapped;
    live = result.live;
    if (result.versions.every((v) => v === primary)) {
      const { destroyed } = await keys.destroyOlderVersions(SUBJECT_WRAP_KEY);
      return { version: primary, rewrapped, live, destroyed };
    }
  }
  throw new SubjectsError(
    'SUBJECT_STORE_UNAVAILABLE',
    `living subject keys still name older versions of ${SUBJECT_WRAP_KEY} after ${PASSES} passes (a host keeps creating keys under an old version): nothing was destroyed; run it again`,
  );
}
