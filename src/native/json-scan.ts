import type { Expectation } from '../json-bytes/scan.ts';
import { nativeCore, offsetsOf } from './core.ts';

/** What the native scanner found in one record: its events (scan.ts numbering, spans relative to the record), or that it is not JSON. */
export type ScannedRecord = Uint32Array | 'not JSON';

/** The native core's JSON scanner over one compiled expectation tree (native/src/json_scanner.rs). */
export interface NativeJsonScanner {
  /** each record's events, as scanJson writes them, in one call */
  scanMany(records: readonly Uint8Array[]): ScannedRecord[];
}

/**
 * The JSON byte scanner of src/json-bytes ported to the native core (issue 42), over the same
 * compiled tree (`root`: compileExpectation's; null validates only). The JavaScript scanner is its
 * oracle: test/native/json-scan fuzzes the two against each other. Not yet on any pipeline's path:
 * the unmapped guard's visitor and the splice stay in JavaScript, so a chunk cannot yet cross once.
 */
export function nativeJsonScanner(root: Expectation | null): NativeJsonScanner {
  const { nodes, names, units } = encodeTree(root);
  const scanner = new (nativeCore().JsonScanner)(nodes, names, units);
  return {
    scanMany(records) {
      const offsets = offsetsOf(records.map((r) => r.length));
      const laid = Buffer.allocUnsafe(offsets[records.length]!);
      records.forEach((r, i) => laid.set(r, offsets[i]));
      const { events, ends, failed } = scanner.scanMany(laid, offsets);
      const out: ScannedRecord[] = records.map((_, i) => events.subarray(4 * (i === 0 ? 0 : ends[i - 1]!), 4 * ends[i]!));
      for (const i of failed) out[i] = 'not JSON';
      return out;
    },
  };
}

/**
 * The tree as json_scanner.rs reads it: node count, then per node `folded, elements + 1 (0: none),
 * key count, per key (names offset, length, units offset, length, value node, ms), object ms,
 * array ms, leaf ms, all ms` — each ms list as its length and entries; key names as UTF-8 (`names`)
 * and as JavaScript holds them (`units`, UTF-16).
 */
function encodeTree(root: Expectation | null): { nodes: Uint32Array; names: Uint8Array; units: Uint16Array } {
  const order: Expectation[] = [];
  const index = new Map<Expectation, number>();
  const visit = (e: Expectation): number => {
    let i = index.get(e);
    if (i !== undefined) return i;
    index.set(e, (i = order.length));
    order.push(e);
    for (const k of e.keys) visit(k.value);
    if (e.elements) visit(e.elements);
    return i;
  };
  if (root) visit(root);
  const words: number[] = [order.length];
  const names: number[] = [];
  const units: number[] = [];
  const list = (ms: readonly number[]) => words.push(ms.length, ...ms);
  for (const e of order) {
    words.push(e.keys[0]?.folded === true ? 1 : 0, e.elements ? index.get(e.elements)! + 1 : 0, e.keys.length);
    for (const k of e.keys) {
      words.push(names.length, k.bytes.length, units.length, k.name.length, index.get(k.value)!);
      names.push(...k.bytes);
      for (let i = 0; i < k.name.length; i++) units.push(k.name.charCodeAt(i));
      list(k.ms);
    }
    list(e.objectMs);
    list(e.arrayMs);
    list(e.leafMs);
    list(e.allMs);
  }
  return { nodes: Uint32Array.from(words), names: Uint8Array.from(names), units: Uint16Array.from(units) };
}
