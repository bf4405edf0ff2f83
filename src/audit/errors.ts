import { LayerError, type ErrorEntry, type LayerErrorOptions } from '../engine/index.ts';

/** The error codes of the audit sinks (src/audit). src/errors/catalog.ts gathers every layer's; docs/errors.md lists them. */
export const AUDIT_ERRORS = {
  AUDIT_UNAVAILABLE: { status: 503, retriable: true, title: 'The audit sink cannot record the call, so the call was refused' },
} as const satisfies Record<string, ErrorEntry>;

export type AuditErrorCode = keyof typeof AUDIT_ERRORS;

/** An error of the audit sinks: one of its codes, with the status, title and retriable of its catalog. */
export class AuditError extends LayerError<AuditErrorCode> {
  constructor(code: AuditErrorCode, message: string, options?: LayerErrorOptions) {
    super(AUDIT_ERRORS, code, message, options);
  }
}
