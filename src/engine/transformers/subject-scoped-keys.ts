import { ValueError, VeilError } from '../errors.ts';
import type { SecretKey } from '../key-access/secret-key.ts';
import { deriveSubjectKey, type SubjectEntry, type SubjectSlot } from '../key-access/subject-keyring.ts';
import type { KeyRef } from './transformer.ts';
import type { KeyVersions } from './versioned-keys.ts';

/**
 * The primitives of a subject-scoped key reference (issue 29): the current subject's key (set by
 * the engine in the SubjectSlot), derived for this reference, its generation standing where a
 * shared key's version stands — in the output header, so a value of an erased generation answers
 * SUBJECT_ERASED even after the person returned and got a new key. Primitives are cached per
 * subject key handle (weakly: they go when the store's handle cache lets the handle go).
 */
export class SubjectScopedKeys<P> implements KeyVersions<P> {
  private readonly cache = new WeakMap<SecretKey, P>();
  private readonly ref: KeyRef;
  private readonly slot: SubjectSlot;
  private readonly build: (key: SecretKey) => P;

  constructor(ref: KeyRef, slot: SubjectSlot, build: (key: SecretKey) => P) {
    this.ref = ref;
    this.slot = slot;
    this.build = build;
  }

  protectVersion(): number {
    const entry = this.entry();
    if (!entry) throw new VeilError('KEY_UNAVAILABLE', `no key was fetched for the data subject of key reference ${this.ref.name}`);
    if (entry.erased) throw new ValueError('SUBJECT_ERASED', 'belongs to a data subject whose key was erased');
    return entry.generation;
  }

  forProtect(version: number): P {
    const entry = this.entry();
    if (!entry || entry.erased || entry.generation !== version)
      throw new VeilError('KEY_UNAVAILABLE', `the data subject's key generation ${version} is not the current one`);
    return this.primitive(entry.key);
  }

  forUnprotect(version: number): P {
    const entry = this.entry();
    if (entry && version < entry.generation + (entry.erased ? 1 : 0))
      throw new ValueError('SUBJECT_ERASED', 'was protected under a data subject key that was erased');
    if (!entry || entry.erased || version !== entry.generation)
      throw new ValueError('PROTECTED_VALUE_INVALID', "names a data subject key generation that does not exist (tampered, or another subject's value)");
    return this.primitive(entry.key);
  }

  private entry(): SubjectEntry | undefined {
    const current = this.slot.current();
    if (current === undefined)
      throw new ValueError('SUBJECT_REQUIRED', `is protected under key reference ${this.ref.name}, scoped to the data subject, and no subject was given`);
    if (current.entry === 'missing')
      throw new VeilError('KEY_UNAVAILABLE', `the data subject's key for key reference ${this.ref.name} was not fetched before the call`);
    return current.entry;
  }

  private primitive(subjectKey: SecretKey): P {
    let p = this.cache.get(subjectKey);
    if (!p) {
      p = this.build(deriveSubjectKey(subjectKey, { id: this.ref.id, type: this.ref.type as Parameters<typeof deriveSubjectKey>[1]['type'] }));
      this.cache.set(subjectKey, p);
    }
    return p;
  }
}
