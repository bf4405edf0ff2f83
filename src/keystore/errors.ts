import { VeilError, type ErrorDetail, type ErrorEntry } from '../engine/index.ts';

/** The error codes of the keystore and the KEK behind it (src/keystore, src/keystore/kms). src/errors/catalog.ts gathers every layer's; docs/errors.md lists them. */
export const KEYSTORE_ERRORS = {
  KEYSTORE_INVALID: { status: 500, retriable: false, title: 'The keystore cannot be read or fails authentication' },
  KMS_UNAVAILABLE: { status: 503, retriable: true, title: 'The KMS holding the key-encryption key cannot be reached (and keys it unwrapped have outlived their cache lifetime)' },
  KMS_REFUSED: { status: 500, retriable: false, title: 'The KMS refuses to wrap or unwrap: wrong key-encryption key, credentials, context, or tampered material' },
  KEY_NOT_FOUND: { status: 404, retriable: false, title: 'No key with that id' },
  KEY_EXISTS: { status: 409, retriable: false, title: 'A key with that id exists already' },
  KEY_MATERIAL_INVALID: { status: 400, retriable: false, title: 'Imported key material has the wrong size or encoding' },
} as const satisfies Record<string, ErrorEntry>;

export type KeystoreErrorCode = keyof typeof KEYSTORE_ERRORS;

/** An error of the keystore and the KEK behind it: one of its codes, with the status, title and retriable of its catalog. */
export class KeystoreError extends VeilError {
  declare readonly code: KeystoreErrorCode;
  constructor(code: KeystoreErrorCode, message: string, options?: { cause?: unknown; details?: readonly ErrorDetail[] }) {
    super(code, message, options?.details ?? [], options?.cause === undefined ? undefined : { cause: options.cause }, KEYSTORE_ERRORS[code]);
    this.name = 'KeystoreError';
  }
}
