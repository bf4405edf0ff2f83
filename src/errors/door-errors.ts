import { LayerError, type ErrorEntry, type LayerErrorOptions } from '../engine/index.ts';

/** The error codes of what every door refuses of a request before the engine sees it: the HTTP service, the gateway, the stream (the unmapped guard). src/errors/catalog.ts gathers every layer's; docs/errors.md lists them. */
export const DOOR_ERRORS = {
  CONTENT_TYPE_UNSUPPORTED: { status: 415, retriable: false, title: 'The body must be application/json' },
  BODY_TOO_LARGE: { status: 413, retriable: false, title: 'The body exceeds the size limit' },
  LIMIT_EXCEEDED: { status: 413, retriable: false, title: 'The call holds more requests or instances than the limit' },
  REQUEST_TIMEOUT: { status: 408, retriable: false, title: 'The request body did not arrive within the body read timeout' },
  METHOD_NOT_ALLOWED: { status: 405, retriable: false, title: 'The resource does not support the method' },
  UNMAPPED_PERSONAL_DATA: { status: 422, retriable: false, title: 'A value at a path the mapping does not name looks like personal data (the unmapped guard): refused; the error names the path and the kind, never the value' },
} as const satisfies Record<string, ErrorEntry>;

export type DoorErrorCode = keyof typeof DOOR_ERRORS;

/** An error of what every door refuses of a request before the engine sees it: the HTTP service, the gateway, the stream: one of its codes, with the status, title and retriable of its catalog. */
export class DoorError extends LayerError<DoorErrorCode> {
  constructor(code: DoorErrorCode, message: string, options?: LayerErrorOptions) {
    super(DOOR_ERRORS, code, message, options);
  }
}
