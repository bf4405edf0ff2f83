import type { SchemaRegistryPort, SchemaType } from './registry-port.ts';
import { memo } from '../memo.ts';

/**
 * Caches a registry forever: schema text by id and id by (subject, schema text) never change once
 * the registry answered. Concurrent identical lookups share one request. Failures are not cached,
 * so the next lookup asks again. Put it outside RetryingRegistry, so waiters share the retries too.
 */
export class CachingRegistry implements SchemaRegistryPort {
  private readonly inner: SchemaRegistryPort;
  private readonly schemas = new Map<number, Promise<string>>();
  private readonly ids = new Map<string, Promise<number>>();

  constructor(inner: SchemaRegistryPort) {
    this.inner = inner;
  }

  schemaById(id: number): Promise<string> {
    return memo(this.schemas, id, () => this.inner.schemaById(id));
  }

  register(subject: string, schema: string, schemaType: SchemaType = 'AVRO'): Promise<number> {
    return memo(this.ids, `${subject}\u0000${schemaType}\u0000${schema}`, () => this.inner.register(subject, schema, schemaType));
  }
}
