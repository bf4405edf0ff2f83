import { layerErrorType } from '../engine/index.ts';
import { SUBJECTS_ERRORS } from '../errors/codes.ts';

export type SubjectsErrorCode = keyof typeof SUBJECTS_ERRORS;

/** An error of the subject-key store: one of its codes, with the status, title and retriable of its catalog. */
export class SubjectsError extends layerErrorType(SUBJECTS_ERRORS) {}
