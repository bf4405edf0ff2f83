/**
 * The database adapter's front door: what veil serve takes (the Unix socket PostgreSQL's backends
 * call, docs/database.md "The local socket") and what the `veil db` commands and `veil discover`
 * take (the SQL generators, psql, rewrap, the drift check). The error catalog alone reads
 * errors.ts directly (it is imported by every module here).
 */
export { dbSocketOptionsFromEnv, openDbSocket, type DbSocketOptions, type DbSocketServer } from './socket-server.ts';
export type { DbSocketDeps } from './socket-session.ts';
export type { LeaseSettings } from './socket-leases.ts';
export { runPsql } from './psql.ts';
export { configureSql } from './configure-sql.ts';
export { grantSql, type GrantCommand } from './grant-sql.ts';
export { installSql } from './install-sql.ts';
export { inspectTable, runRewrap, type ColumnField, type RewrapCounts, type RewrapResult, type RewrapSubjects, type SqlSession } from './rewrap.ts';
export { checkColumnName, parseTableName, type TableName } from './rewrap-sql.ts';
export { DbFault } from './errors.ts';
export { exitCodeOf, failureText, jsonReport, runDriftCheck, textReport } from './drift-check.ts';
