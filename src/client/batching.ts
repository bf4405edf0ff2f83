import type { ClientLimits } from './limits.ts';

/** One value to transform (spec §2.6). */
export interface Instance {
  className: string;
  propertyName: string;
  value: string;
}

/** A run of one operation's instances that becomes one request element of one call. */
export interface Part {
  operation: number;
  start: number;
  end: number;
}

/** The parts that go into one /transform call. */
export type Chunk = Part[];

const encoder = new TextEncoder();

/**
 * The bytes a request element adds besides its instances:
 * {"guid":"<uuid>","rightsContext":"<uuid>","processingContext":"<uuid>","instances":[]},
 */
const REQUEST_OVERHEAD = 3 * 36 + 70;

/**
 * Splits operations into calls that stay within the service's limits: at most `requests`
 * request elements and `instancesPerCall` instances per call, and a body of at most `bodyBytes`
 * (instances are measured exactly as JSON; `envelopeBytes` bounds the contexts). An operation
 * larger than one call continues in the next. Instances stay in order, so answers map back by
 * position. One instance bigger than a body on its own still goes alone: the service refuses it
 * with its own error (BODY_TOO_LARGE), rather than the client guessing.
 */
export function planChunks(operations: readonly (readonly Instance[])[], limits: ClientLimits, envelopeBytes: number): Chunk[] {
  const chunks: Chunk[] = [];
  let chunk: Chunk = [];
  let instances = 0;
  let bytes = envelopeBytes;
  const close = () => {
    if (chunk.length) chunks.push(chunk);
    chunk = [];
    instances = 0;
    bytes = envelopeBytes;
  };
  operations.forEach((ops, operation) => {
    let part: Part | undefined;
    for (let i = 0; i < ops.length; i++) {
      const size = encoder.encode(JSON.stringify(ops[i])).length + 1;
      const extra = size + (part ? 0 : REQUEST_OVERHEAD);
      const full = instances >= limits.instancesPerCall || (instances > 0 && bytes + extra > limits.bodyBytes) || (!part && chunk.length >= limits.requests);
      if (full) {
        close();
        part = undefined;
      }
      if (!part) {
        part = { operation, start: i, end: i };
        chunk.push(part);
        bytes += REQUEST_OVERHEAD;
      }
      part.end = i + 1;
      instances++;
      bytes += size;
    }
  });
  close();
  return chunks;
}
