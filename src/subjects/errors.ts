import { LayerError, type ErrorEntry, type LayerErrorOptions } from '../engine/index.ts';

/** The error codes of the subject-key store (src/subjects, issue 29). src/errors/catalog.ts gathers every layer's; docs/errors.md lists them. */
export const SUBJECTS_ERRORS = {
  SUBJECT_ERASED: { status: 410, retriable: false, title: "The data subject's key was erased: values protected under it can no longer be unprotected, and it is not recreated" },
  SUBJECT_ID_INVALID: { status: 400, retriable: false, title: 'A subject id is empty, longer than 512 bytes, or holds control characters or ill-formed Unicode' },
  SUBJECT_STORE_UNAVAILABLE: { status: 503, retriable: true, title: 'The subject-key store cannot be read or written, or this process has not caught up with it recently enough to serve subject keys' },
} as const satisfies Record<string, ErrorEntry>;

export type SubjectsErrorCode = keyof typeof SUBJECTS_ERRORS;

/** An error of the subject-key store: one of its codes, with the status, title and retriable of its catalog. */
export class SubjectsError extends LayerError<SubjectsErrorCode> {
  constructor(code: SubjectsErrorCode, message: string, options?: LayerErrorOptions) {
    super(SUBJECTS_ERRORS, code, message, options);
  }
}
