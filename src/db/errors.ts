import { layerErrorType, layerFaultType } from '../engine/index.ts';
import { DB_ERRORS } from '../errors/codes.ts';

export type DbErrorCode = keyof typeof DB_ERRORS;

/** A refusal of the database socket's leases (lease-grant.ts, socket-leases.ts): one of the codes above. */
export class DbError extends layerErrorType(DB_ERRORS) {}

/**
 * The database adapter's faults: a frame of the local socket that breaks the grammar, which the
 * session answers with REQUEST_MALFORMED and a closed connection (and a reply parser meets alike);
 * a table `veil db rewrap` refuses, which the command prints. Never answered as they are.
 */
export const DB_FAULTS = {
  /** a socket frame breaks the grammar; the message says which rule, never a byte of the frame (frame-codec.ts) */
  FRAME_MALFORMED: { retriable: false },
  /** the rewrap cannot work with the table or an option; the message names objects, never a value (rewrap-table.ts) */
  REWRAP_REFUSED: { retriable: false },
} as const;

export type DbFaultCode = keyof typeof DB_FAULTS;

/** A fault of the database adapter: one of the codes above. */
export class DbFault extends layerFaultType(DB_FAULTS) {}
