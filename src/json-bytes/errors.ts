import { layerFaultType } from '../engine/index.ts';

/**
 * The JSON byte scanner's faults: its callers (the stream's serdes, the gateway's bodies) turn
 * them into their own codes (RECORD_MALFORMED, BODY_NOT_JSON); no client meets them as they are.
 */
export const JSON_BYTES_FAULTS = {
  /** the bytes are not one JSON text (scan.ts); the message says no more, never quoting them */
  JSON_SYNTAX: { retriable: false },
  /** two splices cover the same bytes: two paths reach the same JSON value (splice.ts) */
  SPLICE_OVERLAP: { retriable: false },
} as const;

/** A fault of the JSON byte scanner or splice: one of the codes above. */
export class JsonBytesFault extends layerFaultType(JSON_BYTES_FAULTS) {}

/** whether `e` is the scanner's "not JSON" */
export function isNotJson(e: unknown): boolean {
  return e instanceof JsonBytesFault && e.code === 'JSON_SYNTAX';
}
