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
  if (edits.length > 1) edits.sort((a, b) => a.start - b.start);
  const sizes: number[] = [];
  let size = bytes.length;
  let prev = 0;
  for (const e of edits) {
    if (e.start < prev) throw new OverlappingSpliceError();
    const n = Buffer.byteLength(e.json, 'utf8');
    sizes.push(n);
    size += n - (e.end - e.start);
    prev = e.end;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  prev = 0;
  edits.forEach((e, i) => {
    at += bytes.copy(out, at, prev, e.start);
    at += out.write(e.json, at, sizes[i]!, 'utf8');
    prev = e.end;
  });
  bytes.copy(out, at, prev);
  return out;
}

/** Two edits of one value. */
export class OverlappingSpliceError extends Error {
  constructor() {
    super('two paths reach the same JSON value');
    this.name = 'OverlappingSpliceError';
  }
}
