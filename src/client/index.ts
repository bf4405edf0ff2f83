/**
 * veil/client: the application-layer client of veil. Dependency-free (global fetch); see
 * docs/client.md and examples/app-layer.
 */
export { VeilClient, type CallOptions, type Evidence, type FieldOptions, type Operation, type ValueOptions, type VeilClientOptions } from './veil-client.ts';
export { CLIENT_ERROR_CATALOG, clientError, VeilClientError, type ClientErrorCode, type ClientErrorDetail } from './errors.ts';
export { DEFAULT_CLIENT_LIMITS, type ClientLimits } from './limits.ts';
export type { Instance } from './batching.ts';
export type { FieldMap } from './field-map.ts';
export type { Clock, RetryOptions } from './retry.ts';
export { clientCredentials, type TokenSource } from './token-source.ts';
export type { FetchLike } from './http.ts';
