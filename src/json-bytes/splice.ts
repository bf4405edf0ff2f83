import { JsonBytesFault } from './errors.ts';
/** One span of a JSON text to replace, and the JSON text (already encoded) that replaces it. */
export interface Splice {
  start: number;
  end: number;
  json: string;
}

/**
 * `bytes` with each span replaced by its JSON text; every other byte stays as it was. Spans are
 * scalar values from a scan, so two overlap only when two paths reach one value: a caller's bug
 * (its configuration check should have refused it), thrown as an Error.
 */
export function spliceJson(bytes: Buffer, edits: Splice[]): Buffer {
  if (edits.length === 0) return bytes;
  // edits mostly come in document order; Array.prototype.sort allocates even for a sorted list
  if (!inOrder(edits)) edits.sort((a, b) => a.start - b.start);
  let size = bytes.length;
  let prev = 0;
  for (let i = 0; i < edits.length; i++) {
    const e = edits[i]!;
    if (e.start < prev) throw new JsonBytesFault('SPLICE_OVERLAP', 'two paths reach the same JSON value');
    size += Buffer.byteLength(e.json, 'utf8') - (e.end - e.start);
    prev = e.end;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  prev = 0;
  for (let i = 0; i < edits.length; i++) {
    const e = edits[i]!;
    at += bytes.copy(out, at, prev, e.start);
    at += out.write(e.json, at, 'utf8');
    prev = e.end;
  }
  bytes.copy(out, at, prev);
  return out;
}

function inOrder(edits: readonly Splice[]): boolean {
  for (let i = 1; i < edits.length; i++) if (edits[i]!.start < edits[i - 1]!.start) return false;
  return true;
}

/** Two edits of one value. */
