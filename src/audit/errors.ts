import { layerErrorType } from '../engine/index.ts';
import { AUDIT_ERRORS } from '../errors/codes.ts';

export type AuditErrorCode = keyof typeof AUDIT_ERRORS;

/** An error of the audit sinks: one of its codes, with the status, title and retriable of its catalog. */
export class AuditError extends layerErrorType(AUDIT_ERRORS) {}
