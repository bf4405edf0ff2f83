import { layerErrorType } from '../engine/index.ts';
import { KEYSTORE_ERRORS } from '../errors/codes.ts';

export type KeystoreErrorCode = keyof typeof KEYSTORE_ERRORS;

/** An error of the keystore and the KEK behind it: one of its codes, with the status, title and retriable of its catalog. */
export class KeystoreError extends layerErrorType(KEYSTORE_ERRORS) {}
