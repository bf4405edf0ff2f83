/**
 * What veil serve takes from the database adapter: the Unix socket PostgreSQL's backends call
 * (docs/database.md, "The local socket"). The `veil db` commands import their SQL generators
 * directly.
 */
export { dbSocketOptionsFromEnv, openDbSocket, type DbSocketOptions, type DbSocketServer } from './socket-server.ts';
export type { DbSocketDeps } from './socket-session.ts';
export type { LeaseSettings } from './socket-leases.ts';
