import { LayerError, type ErrorEntry, type LayerErrorOptions } from '../engine/index.ts';

/** The error codes of the subject-key store (src/subjects, issue 29); SUBJECT_ERASED, SUBJECT_ID_INVALID and SUBJECT_REQUIRED are the engine's. src/errors/catalog.ts gathers every layer's; docs/errors.md lists them. */
export const SUBJECTS_ERRORS = {
  SUBJECT_STORE_UNAVAILABLE: { status: 503, retriable: true, title: 'The subject-key store cannot be read or written, or this process has not caught up with it recently enough to serve subject keys' },
  SUBJECT_STORE_NOT_SHARED: { status: 500, retriable: false, title: 'The subject-key store is local (subjects.db in the data dir) where it would split or lose subject keys: the process shares a control store with others (VEIL_CONTROL_STORE=kafka) or its data dir goes with it (VEIL_DATA_DIR_EPHEMERAL=true); VEIL_SUBJECT_STORE=kafka shares them' },
  ERASURE_REQUEST_INVALID: { status: 400, retriable: false, title: 'An erasure or status request is not an object with the subject id and, to erase, a reason of 1 to 500 characters without control characters that does not name the subject; or the eraser named is not acceptable' },
  ERASURE_NOT_PERMITTED: { status: 403, retriable: false, title: "The caller's token lacks the admin right a subject administration call needs: admin-publisher to erase, any admin role to read a subject's status" },
  RECEIPT_INVALID: { status: 422, retriable: false, title: "An erasure receipt is not a compact JWS of veil's receipt type signed by a version of the key set's veil-receipts key, or its claims do not have the receipt's shape" },
} as const satisfies Record<string, ErrorEntry>;

export type SubjectsErrorCode = keyof typeof SUBJECTS_ERRORS;

/** An error of the subject-key store: one of its codes, with the status, title and retriable of its catalog. */
export class SubjectsError extends LayerError<SubjectsErrorCode> {
  constructor(code: SubjectsErrorCode, message: string, options?: LayerErrorOptions) {
    super(SUBJECTS_ERRORS, code, message, options);
  }
}
