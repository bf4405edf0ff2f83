import { LayerError, type ErrorEntry, type LayerErrorOptions } from '../engine/index.ts';

/** The error codes of the keystore and the KEK behind it (src/keystore, src/keystore/kms). src/errors/catalog.ts gathers every layer's; docs/errors.md lists them. */
export const KEYSTORE_ERRORS = {
  KEYSTORE_INVALID: { status: 500, retriable: false, title: 'The keystore cannot be read or fails authentication' },
  KMS_UNAVAILABLE: { status: 503, retriable: true, title: 'The KMS holding the key-encryption key cannot be reached (and keys it unwrapped have outlived their cache lifetime)' },
  KMS_REFUSED: { status: 500, retriable: false, title: 'The KMS refuses to wrap or unwrap: wrong key-encryption key, credentials, context, or tampered material' },
  KEY_NOT_FOUND: { status: 404, retriable: false, title: 'No key with that id' },
  KEY_EXISTS: { status: 409, retriable: false, title: 'A key with that id exists already' },
  KEY_MATERIAL_INVALID: { status: 400, retriable: false, title: 'Imported key material has the wrong size or encoding' },
  KEYSET_CONFLICT: { status: 409, retriable: false, title: 'A change to the key set lost the race to changes by other processes (sharing the data dir or the control store): make it again' },
} as const satisfies Record<string, ErrorEntry>;

export type KeystoreErrorCode = keyof typeof KEYSTORE_ERRORS;

/** An error of the keystore and the KEK behind it: one of its codes, with the status, title and retriable of its catalog. */
export class KeystoreError extends LayerError<KeystoreErrorCode> {
  constructor(code: KeystoreErrorCode, message: string, options?: LayerErrorOptions) {
    super(KEYSTORE_ERRORS, code, message, options);
  }
}
