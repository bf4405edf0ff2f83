import { layerErrorType } from '../engine/index.ts';
import { DB_ERRORS } from '../errors/codes.ts';

export type DbErrorCode = keyof typeof DB_ERRORS;

/** A refusal of the database socket's leases (lease-grant.ts, socket-leases.ts): one of the codes above. */
export class DbError extends layerErrorType(DB_ERRORS) {}
