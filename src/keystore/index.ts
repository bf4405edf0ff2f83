// The keystore's front door: the key set on disk (LocalKeystore, sealed under the master key or a
// KMS's KEK), the KEK chosen by VEIL_KMS (its adapters load only when selected: kms-from-env.ts
// imports them on first use), the lease that keeps unwrapped keys usable, the token signer, the
// wrapping of subject keys and the checks of configured keys. Key bytes stay in this module: what
// leaves it is a SecretKey (the engine's) or a signature. Outside src/keystore only this file (and
// the layer's errors.ts) is imported (tools/eslint-plugin-veil.js, front-doors).
export { ensureKey, type KeyCreator } from './ensure-key.ts';
export { findKeyGaps, provisionKeys, requireKeys } from './config-keys.ts';
export { JwtSigner } from './jwt-signer.ts';
export { KeyLease, logKekTransitions } from './key-lease.ts';
export { isKeyType, isValidKeyId } from './key-material.ts';
export { opensUnder } from './keyset-open.ts';
export { macVerifies, macWith } from './keystore-mac.ts';
export { bareKekFromEnv, kekFromEnv } from './kms/kms-from-env.ts';
export type { KmsMetrics } from './kms/kms-metrics.ts';
export { leasedKeyBytes } from './leased-key.ts';
export { KEYSTORE_FILE, LocalKeystore } from './local-keystore.ts';
export { describeMasterKeySource, MASTER_KEY_ENV, resolveMasterKey } from './master-key.ts';
export { ensureSubjectKeys, SUBJECT_WRAP_KEY, SubjectKeyWrapper, wrapVersion, wrappedKeyId, type SubjectKeySource } from './subject-key-wrapper.ts';
