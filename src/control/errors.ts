import { LayerError, type ErrorEntry, type LayerErrorOptions } from '../engine/index.ts';

/** The error codes of the shared control store (src/control). src/errors/catalog.ts gathers every layer's; docs/errors.md lists them. */
export const CONTROL_ERRORS = {
  CONTROL_STORE_UNAVAILABLE: { status: 503, retriable: true, title: 'The shared control store (the Kafka topic of configuration versions and key sets) cannot be read or written' },
} as const satisfies Record<string, ErrorEntry>;

export type ControlErrorCode = keyof typeof CONTROL_ERRORS;

/** An error of the shared control store: one of its codes, with the status, title and retriable of its catalog. */
export class ControlError extends LayerError<ControlErrorCode> {
  constructor(code: ControlErrorCode, message: string, options?: LayerErrorOptions) {
    super(CONTROL_ERRORS, code, message, options);
  }
}
