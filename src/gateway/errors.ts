import { LayerError, type ErrorEntry, type LayerErrorOptions } from '../engine/index.ts';

/** The error codes of the gateway (src/gateway). src/errors/catalog.ts gathers every layer's; docs/errors.md lists them. */
export const GATEWAY_ERRORS = {
  BODY_NOT_JSON: { status: 400, retriable: false, title: 'The body of a route with field selectors is not JSON, or cannot be decoded with its Content-Encoding' },
  CONTENT_ENCODING_UNSUPPORTED: { status: 415, retriable: false, title: 'The body of a route with field selectors has a Content-Encoding other than gzip, br, deflate or identity' },
  FIELD_SHAPE_MISMATCH: { status: 422, retriable: false, title: 'A selected request-body field holds an object or array, or sits under a value of the wrong shape, so it cannot be protected' },
  PATH_NOT_CANONICAL: { status: 400, retriable: false, title: 'The request path has dot or empty segments (also once decoded), a backslash, an encoded slash, backslash, NUL or semicolon, a malformed percent-encoding, or ; parameters its route does not accept, which the gateway does not route' },
  REQUEST_FRAMING_INVALID: { status: 400, retriable: false, title: 'The request cannot be parsed unambiguously (both Content-Length and Transfer-Encoding, a repeated or malformed Content-Length, Transfer-Encoding other than exactly chunked, obs-fold, bare CR or LF, a malformed chunk); the connection is closed' },
  REQUEST_TARGET_INVALID: { status: 400, retriable: false, title: 'The request target is not a path, is an absolute URL naming another authority than the Host header, holds a fragment, or the request has no or several Host headers' },
  BODY_NOT_ALLOWED: { status: 400, retriable: false, title: 'A GET, HEAD, DELETE, OPTIONS or TRACE request carries a body on a gateway route that does not accept one' },
  HEADERS_TOO_LARGE: { status: 431, retriable: false, title: 'The request line and headers exceed the gateway\'s limit' },
  EXPECTATION_FAILED: { status: 417, retriable: false, title: 'The request has an Expect header other than 100-continue' },
  UPSTREAM_UNAVAILABLE: { status: 502, retriable: true, title: 'The upstream application cannot be connected to; nothing was sent to it' },
  UPSTREAM_TIMEOUT: { status: 504, retriable: false, title: 'The upstream application did not answer in time or dropped the connection after the request was sent; it may have acted on it' },
  UPSTREAM_RESPONSE_INVALID: { status: 502, retriable: false, title: 'The upstream response of a route with response selectors cannot be decoded, is not JSON, or exceeds the limit' },
} as const satisfies Record<string, ErrorEntry>;

export type GatewayErrorCode = keyof typeof GATEWAY_ERRORS;

/** An error of the gateway: one of its codes, with the status, title and retriable of its catalog. */
export class GatewayError extends LayerError<GatewayErrorCode> {
  constructor(code: GatewayErrorCode, message: string, options?: LayerErrorOptions) {
    super(GATEWAY_ERRORS, code, message, options);
  }
}
