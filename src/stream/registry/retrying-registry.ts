import type { SchemaRegistryPort, SchemaType } from './registry-port.ts';
import { StreamError } from '../stream-error.ts';

export interface RetryOptions {
  /** calls in all, the first included (default 5) */
  attempts?: number;
  /** the wait after the first failure; it doubles per failure (default 100 ms) */
  baseDelayMs?: number;
  /** the longest wait (default 5 s) */
  maxDelayMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Retries retriable StreamErrors (REGISTRY_UNAVAILABLE) with exponential backoff; anything else —
 * SCHEMA_UNKNOWN, programming errors — passes through at once. After the last attempt the last
 * error is thrown as it is (still retriable: the pipeline then reads the batch again).
 */
export class RetryingRegistry implements SchemaRegistryPort {
  private readonly inner: SchemaRegistryPort;
  private readonly attempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(inner: SchemaRegistryPort, options: RetryOptions = {}) {
    this.inner = inner;
    this.attempts = Math.max(1, options.attempts ?? 5);
    this.baseDelayMs = options.baseDelayMs ?? 100;
    this.maxDelayMs = options.maxDelayMs ?? 5000;
    this.sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  }

  schemaById(id: number): Promise<string> {
    return this.retry(() => this.inner.schemaById(id));
  }

  register(subject: string, schema: string, schemaType: SchemaType = 'AVRO'): Promise<number> {
    return this.retry(() => this.inner.register(subject, schema, schemaType));
  }

  private async retry<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (e) {
        if (!(e instanceof StreamError) || !e.retriable || attempt >= this.attempts) throw e;
        await this.sleep(Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (attempt - 1)));
      }
    }
  }
}
