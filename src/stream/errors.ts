import { LayerError, type ErrorEntry, type LayerErrorOptions } from '../engine/index.ts';

/** The error codes of the Kafka pipelines and the unprotect responder (src/stream); records fail with StreamError (stream-error.ts). src/errors/catalog.ts gathers every layer's; docs/errors.md lists them. */
export const STREAM_ERRORS = {
  RECORD_MALFORMED: { status: 422, retriable: false, title: 'A Kafka record cannot be decoded (not JSON, not Avro wire format, or not matching its schema)' },
  RECORD_INVALID: { status: 422, retriable: false, title: 'A Kafka record does not validate against its schema (a json-schema pipeline with validate: true); the message names the instance path and keyword, never the value' },
  SCHEMA_UNKNOWN: { status: 422, retriable: false, title: "The schema id of an Avro record is not in the schema registry" },
  FIELD_MISSING: { status: 422, retriable: false, title: 'A mapped field is absent or null and the pipeline dead-letters such records' },
  SCHEMA_PATH_UNKNOWN: { status: 422, retriable: false, title: "A mapped path does not exist in the record's writer schema (a renamed field, a typo): the schema version is refused for the pipeline" },
  KEY_MISSING: { status: 422, retriable: false, title: 'The pipeline protects record keys and the record has none' },
  RECORD_TOO_LARGE: { status: 422, retriable: false, title: "The protected record is larger than the clean topic accepts (its max.message.bytes)" },
  DEAD_LETTER_FAILED: { status: 503, retriable: false, title: 'A dead letter cannot be written (larger than the dead-letter topic accepts); the pipeline stops rather than skip the record' },
  TRANSACTION_ABORTED: { status: 503, retriable: true, title: 'A Kafka transaction failed and was aborted; the batch is read again from the committed offset' },
  REGISTRY_UNAVAILABLE: { status: 503, retriable: true, title: 'The schema registry cannot be reached' },
  DEADLINE_EXCEEDED: { status: 504, retriable: false, title: 'The request arrived after its deadline and was not processed' },
  REPLY_TOPIC_NOT_ALLOWED: { status: 400, retriable: false, title: 'The request names no reply-to topic, or one the configuration does not allow' },
} as const satisfies Record<string, ErrorEntry>;

export type StreamErrorCode = keyof typeof STREAM_ERRORS;

/**
 * A stream code raised as a VeilError: what the unprotect responder answers a request with (a
 * record that cannot be protected fails with StreamError, stream-error.ts, and is dead-lettered).
 */
export class StreamCodeError extends LayerError<StreamErrorCode> {
  constructor(code: StreamErrorCode, message: string, options?: LayerErrorOptions) {
    super(STREAM_ERRORS, code, message, options);
  }
}
