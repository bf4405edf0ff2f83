import { layerErrorType } from '../engine/index.ts';
import { PORTAL_ERRORS } from '../errors/codes.ts';

export type PortalErrorCode = keyof typeof PORTAL_ERRORS;

/** An error of the admin portal: one of its codes, with the status, title and retriable of its catalog. */
export class PortalError extends layerErrorType(PORTAL_ERRORS) {}
