import { LayerError, type ErrorEntry, type LayerErrorOptions } from '../engine/index.ts';

/** The error codes of the database door (src/db): the PL/Python client raises them inside PostgreSQL (src/db/plpython), so they have no error type here. src/errors/catalog.ts gathers every layer's; docs/errors.md lists them. */
export const DB_ERRORS = {
  DB_NOT_CONFIGURED: { status: 500, retriable: false, title: "The database has no veil URL and client credentials (veil db configure)" },
  DB_ROLE_UNMAPPED: { status: 403, retriable: false, title: 'The database role is not mapped to a veil role, or maps to several' },
  DB_CREDENTIALS_REFUSED: { status: 401, retriable: false, title: "veil's token endpoint refused the database's client credentials" },
  DB_SERVICE_UNAVAILABLE: { status: 503, retriable: true, title: 'veil cannot be reached from the database, or answered something that is not a transform response' },
  DB_RATE_LIMITED: { status: 429, retriable: true, title: 'The database role has sent veil more values per minute than veil.rate_limits allows' },
  DB_LEASE_UNAVAILABLE: { status: 409, retriable: false, title: 'veil leases no key for this field: leases are off, or its protect sequence is not one AES-SIV or AES-GCM step under a shared key' },
  DB_LEASE_INVALID: { status: 400, retriable: false, title: 'A lease report names a lease this connection does not hold, or more values than its budget' },
  DB_ARGUMENT_INVALID: { status: 400, retriable: false, title: 'A veil database function was called with a NULL class or property, arrays of different lengths, or a mapped column that is not text' },
} as const satisfies Record<string, ErrorEntry>;

export type DbErrorCode = keyof typeof DB_ERRORS;

/** A refusal of the database socket's leases (lease-grant.ts, socket-leases.ts): one of the codes above. */
export class DbError extends LayerError<DbErrorCode> {
  constructor(code: DbErrorCode, message: string, options?: LayerErrorOptions) {
    super(DB_ERRORS, code, message, options);
  }
}
