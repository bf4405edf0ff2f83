import { layerErrorType } from '../engine/index.ts';
import { CONTROL_ERRORS } from '../errors/codes.ts';

export type ControlErrorCode = keyof typeof CONTROL_ERRORS;

/** An error of the shared control store: one of its codes, with the status, title and retriable of its catalog. */
export class ControlError extends layerErrorType(CONTROL_ERRORS) {}
