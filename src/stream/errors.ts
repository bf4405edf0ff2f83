import { layerErrorType } from '../engine/index.ts';
import { STREAM_ERRORS } from '../errors/codes.ts';

export type StreamErrorCode = keyof typeof STREAM_ERRORS;

/**
 * A stream code raised as a VeilError: what the unprotect responder answers a request with (a
 * record that cannot be protected fails with StreamError, stream-error.ts, and is dead-lettered).
 */
export class StreamCodeError extends layerErrorType(STREAM_ERRORS) {}
