// The subject-key store's front door (issue 29, erasure by crypto-shredding): a random key per data
// subject, wrapped by the key set, in one of two adapters — the data dir (subjects.db, the embedded
// default) or a compacted Kafka topic followed by every process (each with its own view file).
// docs/erasure.md describes the store; src/keystore/subject-key-wrapper.ts wraps and unwraps its keys.
export { SubjectsError, type SubjectsErrorCode } from './errors.ts';
export {
  lazySubjectKeyStore,
  openSubjectKeyStore,
  SUBJECT_STORE_ENV,
  subjectStoreSettings,
  type OpenSubjectStoreOptions,
  type SubjectStoreSettings,
} from './open-subject-store.ts';
export type { ErasedSubject, Erasure, KeyForOptions, SubjectChange, SubjectKey, SubjectKeyStore, SubjectStatus } from './subject-store.ts';
export { LazySubjectKeyStore } from './lazy-store.ts';
export { fetchSubjectKeys, subjectKeysOf, type SubjectNeed } from './keyring.ts';
// the erasure doors (admin API, portal, command line): one service, receipts signed by veil-receipts
export {
  BULK_ERASURE_MAX,
  checkReason,
  ErasureService,
  permits,
  REASON_MAX_CHARS,
  type BulkErasure,
  type ErasureResult,
  type ErasureServiceOptions,
  type SubjectAction,
  type SubjectActor,
} from './erasure.ts';
export {
  ensureReceiptKey,
  RECEIPT_KEY,
  RECEIPT_TYP,
  ReceiptSigner,
  verifyReceipt,
  type ErasureReceipt,
  type ReceiptClaims,
  type ReceiptKeySource,
} from './receipt.ts';
// shredding backups (issue 43): the subject keys' wrapping key rotated, living keys rewrapped, older versions destroyed
export { rotateWrappingKey, type WrapKeySet, type WrapRotation } from './wrap-rotation.ts';
