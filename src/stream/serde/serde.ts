import type { Mapping } from '../protect-record.ts';

/** What to protect in a record value: the pipeline's mapped fields, and what a missing one means. */
export interface RecordProtection {
  maps: readonly Mapping[];
  missing: 'pass' | 'dead-letter';
}

/**
 * Turns a raw record value into its clean form: every mapped field protected, everything else
 * kept. Failures are StreamErrors: RECORD_MALFORMED / SCHEMA_UNKNOWN / FIELD_MISSING / value codes
 * (dead-lettered), REGISTRY_UNAVAILABLE (retried).
 */
export interface Serde {
  /** the clean value (Avro: written with the derived clean schema registered for `cleanTopic`) */
  protect(bytes: Buffer, protection: RecordProtection, cleanTopic: string): Promise<Buffer>;
  /**
   * The same, synchronously, for a serde that needs no I/O (JSON): the pipeline then protects a
   * whole chunk without a promise per record.
   */
  protectSync?(bytes: Buffer, protection: RecordProtection, cleanTopic: string): Buffer;
}
