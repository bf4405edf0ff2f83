/** A decoded record value, and for Avro the schema it was written with. */
export interface Decoded {
  value: unknown;
  schemaId?: number;
}

/**
 * Turns record bytes into an object whose mapped fields the pipeline protects, and back. Failures
 * are StreamErrors: RECORD_MALFORMED / SCHEMA_UNKNOWN (dead-lettered), REGISTRY_UNAVAILABLE
 * (retried).
 */
export interface Serde {
  decode(bytes: Buffer): Promise<Decoded>;
  /** encodes for the clean topic (Avro: with the derived clean schema registered for it) */
  encode(decoded: Decoded, cleanTopic: string): Promise<Buffer>;
}
