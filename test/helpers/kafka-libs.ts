// The class path of Kafka's own jars (kafka-clients and the broker, from Maven Central) that
// scripts/test-env.sh installs. Kept apart from kafka.ts, which imports vitest, so that a bench
// (bench:stream's Java baseline) can use the same jars the tests use as a reference.
import { homedir } from 'node:os';

/** The Kafka version test-env.sh installs and runs (kafka-clients is the same version). */
export function kafkaVersion(): string {
  return process.env.VEIL_TEST_KAFKA_VERSION ?? '3.9.1';
}

/** The directory of the jars, one per artifact. */
export function kafkaLibsDir(): string {
  return `${process.env.VEIL_CACHE_DIR ?? `${homedir()}/.cache/veil`}/kafka-${kafkaVersion()}/libs`;
}

/** The class path of every jar there, as java and javac take a directory wildcard. */
export function kafkaLibs(): string {
  return `${kafkaLibsDir()}/*`;
}
