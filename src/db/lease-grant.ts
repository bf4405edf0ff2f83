import { bindingLabel, FORMAT_TAGS, outputHeader, type CompiledConfig, type Engine, type Identity, type KeyProvider, type KeyRef } from '../engine/index.ts';
import { leasedKeyBytes } from '../keystore/index.ts';
import { DbError } from './errors.ts';
import type { LeaseKind } from './lease-frames.ts';

/** The running configuration a lease is decided under: the engine and what it was compiled from, read together. */
export interface LeaseSource {
  engine: Engine;
  config: CompiledConfig;
}

/** What a backend needs to protect a field's values itself, byte for byte as the engine would. */
export interface LeaseTerms {
  kind: LeaseKind;
  keyId: string;
  version: number;
  /** the version comes from the configuration (pinned), not from the keystore's primary */
  pinned: boolean;
  header: Uint8Array;
  label: string;
  key: Uint8Array;
}

const unavailable = (why: string) => new DbError('DB_LEASE_UNAVAILABLE', `no lease for this field: ${why}`);

/**
 * Decides a lease for one field and veil role, as a PROTECT of that field would be decided: the
 * engine's bind() checks the caller holds the role, the role's rights context grants Protect on
 * the field and the field is configured (the same codes a PROTECT gets). Then only a sequence the
 * backend can reproduce bit-exactly is leased: one forward AES-SIV or AES-GCM step under a shared
 * key. A key scoped to the data subject is never leased — erasing the subject must leave no copy
 * of it anywhere — nor is anything else (FF1, FF3-1, HMAC, masking, several steps): those fields
 * keep the round trip.
 */
export function leaseTerms(source: LeaseSource, keys: KeyProvider, caller: Identity, role: string, className: string, propertyName: string): LeaseTerms {
  const bound = source.engine.bind({
    identity: caller,
    rightsEvidences: [{ name: 'Role', value: role }],
    processingEvidences: [{ name: 'Action', value: 'Protect' }],
    fields: [{ className, propertyName }],
  });
  if (bound.action !== 'Protect' || bound.reveals) throw unavailable('the processing context is not a Protect');
  if (bound.subjectScoped[0]) throw unavailable('its key is scoped to the data subject');
  const plan = source.config.classes.get(className)?.get(propertyName)?.actions.get('Protect');
  if (!plan || plan.direction !== 'forward') throw unavailable('its protect sequence does not run forward');
  const steps = source.config.sequences.get(plan.sequence)?.steps ?? [];
  const step = steps[0];
  if (steps.length !== 1 || !step || (step.type !== 'aes-siv' && step.type !== 'aes-gcm'))
    throw unavailable('its protect sequence is not one AES-SIV or AES-GCM step');
  const ref: KeyRef | undefined = source.config.keys.get(step.key);
  if (!ref || ref.scope === 'subject') throw unavailable('its key is scoped to the data subject');
  keys.assertUsable?.();
  const version = protectVersion(keys, ref);
  const key = version === undefined ? undefined : leasedKeyBytes(keys, ref.id, version);
  if (version === undefined || !key) throw unavailable('its key is not in the keystore');
  return {
    kind: step.type,
    keyId: ref.id,
    version,
    pinned: ref.version !== undefined,
    header: outputHeader(FORMAT_TAGS[step.type], version),
    label: bindingLabel({ className, propertyName }, step.binding),
    key,
  };
}

/** The version a protect uses now: the pinned one, else the keystore's primary (as the engine's VersionedKeys reads it). */
export function protectVersion(keys: KeyProvider, ref: Pick<KeyRef, 'id' | 'version'>): number | undefined {
  return ref.version ?? keys.info(ref.id)?.primary;
}
