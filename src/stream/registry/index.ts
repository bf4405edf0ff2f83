/**
 * The schema registry front door of src/stream: the port the serdes read writers' schemas
 * through, the Confluent-API client, and the caching and retrying layers around it. Code outside
 * src/stream/registry imports only this file.
 */
export type { LatestSchema, SchemaRegistryPort, SchemaType } from './registry-port.ts';
export { confluentRegistry, type ConfluentRegistryOptions } from './confluent-registry.ts';
export { registrySettings, type RegistrySettings } from './registry-settings.ts';
export { CachingRegistry } from './caching-registry.ts';
export { RetryingRegistry, type RetryOptions } from './retrying-registry.ts';
