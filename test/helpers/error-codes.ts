import type { ErrorCode } from '../../src/errors/catalog.ts';

/**
 * The codes only `veil gateway` answers (covered by test/integration/gateway/gateway.test.ts and
 * test/gateway): neither a transform call nor any other HTTP input of `veil serve` gets them.
 */
export const GATEWAY_ONLY_CODES: readonly ErrorCode[] = [
  'BODY_NOT_JSON',
  'CONTENT_ENCODING_UNSUPPORTED',
  'FIELD_SHAPE_MISMATCH',
  'PATH_NOT_CANONICAL',
  'REQUEST_FRAMING_INVALID',
  'REQUEST_TARGET_INVALID',
  'BODY_NOT_ALLOWED',
  'HEADERS_TOO_LARGE',
  'EXPECTATION_FAILED',
  'UPSTREAM_UNAVAILABLE',
  'UPSTREAM_TIMEOUT',
  'UPSTREAM_RESPONSE_INVALID',
];
