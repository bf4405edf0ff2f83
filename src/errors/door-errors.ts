import { layerErrorType } from '../engine/index.ts';
import { DOOR_ERRORS } from './codes.ts';

export type DoorErrorCode = keyof typeof DOOR_ERRORS;

/** An error of what every door refuses of a request before the engine sees it: the HTTP service, the gateway, the stream: one of its codes, with the status, title and retriable of its catalog. */
export class DoorError extends layerErrorType(DOOR_ERRORS) {}
