import { layerErrorType } from '../engine/index.ts';
import { GATEWAY_ERRORS } from '../errors/codes.ts';

export type GatewayErrorCode = keyof typeof GATEWAY_ERRORS;

/** An error of the gateway: one of its codes, with the status, title and retriable of its catalog. */
export class GatewayError extends layerErrorType(GATEWAY_ERRORS) {}
