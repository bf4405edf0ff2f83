import { layerErrorType, layerFaultType } from '../engine/index.ts';
import { GATEWAY_ERRORS } from '../errors/codes.ts';

export type GatewayErrorCode = keyof typeof GATEWAY_ERRORS;

/** An error of the gateway: one of its codes, with the status, title and retriable of its catalog. */
export class GatewayError extends layerErrorType(GATEWAY_ERRORS) {}

/**
 * The gateway's faults: what its modules raise for a caller inside the gateway, which answers with
 * a code of the catalog chosen by where it happened (a body read from the caller or from the
 * upstream, a selector in the configuration); never answered as they are.
 */
export const GATEWAY_FAULTS = {
  /** a body grew past its limit, as sent or once decoded (body-io.ts) */
  BODY_OVER_LIMIT: { retriable: false },
  /** a body did not arrive within its time */
  BODY_READ_TIMEOUT: { retriable: false },
  /** a body's stream ended, failed or closed before its end */
  BODY_CUT_SHORT: { retriable: false },
  /** a body's bytes cannot be decoded with its Content-Encoding */
  BODY_UNDECODABLE: { retriable: false },
  /** a field selector does not parse; the message starts with the column (selector.ts) */
  SELECTOR_SYNTAX: { retriable: false },
  /** a pooled upstream connection was reset as it was reused; the cause is the error to answer (upstream.ts sends again what is replayable) */
  POOLED_CONNECTION_RESET: { retriable: true },
} as const;

export type GatewayFaultCode = keyof typeof GATEWAY_FAULTS;

/** A fault of the gateway: one of the codes above, a message that never holds a value, the cause. */
export class GatewayFault extends layerFaultType(GATEWAY_FAULTS) {}
