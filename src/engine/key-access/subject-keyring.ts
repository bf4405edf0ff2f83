import { AsyncLocalStorage } from 'node:async_hooks';
import { hkdfSync } from 'node:crypto';
import { KEY_TYPES, type KeyType } from './key-provider.ts';
import { revealKeyBytes, SecretKey } from './secret-key.ts';

/**
 * A data subject's key as the engine sees it (issue 29, crypto-shredding): live, with its
 * generation (1 for a subject's first key; a returning person after an erasure gets the next),
 * or erased. The subject-key store (src/subjects) fetches them before a call, because it is
 * asynchronous and the engine is not; its handles have this shape.
 */
export type SubjectEntry =
  { readonly erased?: undefined; readonly generation: number; readonly key: SecretKey } | { readonly erased: true; readonly generation: number };

/**
 * The subjects' keys a call may use, by subject id, fetched by the adapter before the engine runs:
 * an entry for each subject the call names (undefined: the subject has no key, and only an
 * unprotect asked). A subject missing from it was not fetched: the call fails (KEY_UNAVAILABLE).
 */
export type SubjectKeyring = ReadonlyMap<string, SubjectEntry | undefined>;

const SUBJECT_ID_MAX_BYTES = 512;
// C0 and C1 controls; ill-formed Unicode (lone surrogates) is refused by isWellFormed
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;

/** Whether a text can be a subject id: 1 to 512 bytes of well-formed Unicode without control characters. */
export function isSubjectId(id: unknown): id is string {
  return typeof id === 'string' && id.length > 0 && id.isWellFormed() && !CONTROL.test(id) && Buffer.byteLength(id, 'utf8') <= SUBJECT_ID_MAX_BYTES;
}
export const SUBJECT_ID_RULE = `1 to ${SUBJECT_ID_MAX_BYTES} bytes of well-formed Unicode without control characters`;

/** The subject of the values being transformed, and its entry in the keyring (`missing`: not fetched). */
export interface CurrentSubject {
  readonly subject: string;
  readonly entry: SubjectEntry | undefined | 'missing';
}

/**
 * The subject a call's values belong to while the engine runs them. A synchronous run (a call's
 * requests: the engine runs each request's values without awaiting) sets it around them; an
 * asynchronous one (a stream record whose serde awaits a schema registry between its values, and
 * records of different subjects protected concurrently) keeps it in an AsyncLocalStorage, created
 * on the first such run only — Node's AsyncLocalStorage hooks every promise of the process once used.
 */
export class SubjectSlot {
  /** the subject of a synchronous run in progress; `null`: none is */
  private sync: CurrentSubject | undefined | null = null;
  private storage: AsyncLocalStorage<CurrentSubject | undefined> | undefined;

  /** the subject of the values being transformed now; undefined: none was given */
  current(): CurrentSubject | undefined {
    return this.sync !== null ? this.sync : this.storage?.getStore();
  }

  /** Runs `fn`, which must not await, with `subject`'s entry of `ring` as the current one (none: scoped values answer SUBJECT_REQUIRED). */
  run<T>(subject: string | undefined, ring: SubjectKeyring | undefined, fn: () => T): T {
    const before = this.sync;
    this.sync = stateOf(subject, ring);
    try {
      return fn();
    } finally {
      this.sync = before;
    }
  }

  /** run() for a function that awaits: the subject follows it across its awaits. */
  runAsync<T>(subject: string | undefined, ring: SubjectKeyring | undefined, fn: () => Promise<T>): Promise<T> {
    this.storage ??= new AsyncLocalStorage();
    return this.storage.run(stateOf(subject, ring), fn);
  }
}

function stateOf(subject: string | undefined, ring: SubjectKeyring | undefined): CurrentSubject | undefined {
  return subject === undefined ? undefined : { subject, entry: ring?.has(subject) ? ring.get(subject) : 'missing' };
}

/**
 * The key a subject-scoped key reference uses for one subject: HKDF-SHA256 of the subject's
 * random key, with the reference's keystore id and type as info, at the type's key size. One
 * subject key serves every scoped reference (AES-SIV needs 64 bytes, FF1 32) without one key
 * standing in for two purposes; destroying the subject key destroys every key derived from it.
 */
export function deriveSubjectKey(subjectKey: SecretKey, ref: { id: string; type: KeyType }): SecretKey {
  const size = KEY_TYPES[ref.type].sizes[0];
  const bytes = new Uint8Array(hkdfSync('sha256', revealKeyBytes(subjectKey), new Uint8Array(0), `veil/subject-key/1/${ref.type}/${ref.id}`, size));
  return SecretKey.fromBytes(bytes);
}
