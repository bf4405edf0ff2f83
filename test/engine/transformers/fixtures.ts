import { MemoryKeyProvider } from '../../../src/engine/key-access/memory-key-provider.ts';
import type { KeyType } from '../../../src/engine/key-access/key-provider.ts';
import type { KeyRef, TransformerDeps } from '../../../src/engine/transformers/transformer.ts';
import { randomFillSync } from 'node:crypto';

/** Deterministic key bytes: byte i = (seed + i) mod 256, so golden outputs are reproducible. */
export function keyBytes(length: number, seed: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (seed + i) & 0xff);
}

export function keysWith(entries: readonly [id: string, type: KeyType, length: number, seed: number][]): MemoryKeyProvider {
  const keys = new MemoryKeyProvider();
  for (const [id, type, length, seed] of entries) keys.add(id, type, keyBytes(length, seed), '2026-01-01T00:00:00.000Z');
  return keys;
}

export function ref(id: string, type: KeyType, version?: number): KeyRef {
  return { name: id, id, type, ...(version !== undefined ? { version } : {}) };
}

export function deps(keys: MemoryKeyProvider, random: (b: Uint8Array) => Uint8Array = (b) => randomFillSync(b)): TransformerDeps {
  return { keys, random };
}

export const FIELD = { className: 'Customer', propertyName: 'email' };
export const OTHER_FIELD = { className: 'Customer', propertyName: 'name' };

/** Runs fn and returns the ValueError code it throws (fails the test if it does not throw). */
export function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code ?? `non-coded ${(e as Error).name}`;
  }
  throw new Error('expected an error');
}
