import { ValueError, type Chain } from '../../../engine/index.ts';
import { StreamError } from '../../stream-error.ts';
import { guardFor, unmappedError } from '../decoded-drift-guard.ts';
import { protoFinding } from './protobuf-drift-guard.ts';
import { protectInto } from './protobuf-protect.ts';
import type { ProtoSchema } from './protobuf-schema.ts';
import type { Target } from './protobuf-targets.ts';
import { WireWriter } from './protobuf-writer.ts';
import type { RecordProtection } from '../serde.ts';

const EMPTY = Buffer.alloc(0);

/** A value made ready to protect: where its message starts, its target and clean id, and its paths' chains. */
export interface Prepared {
  bodyStart: number;
  /** the protected record's header: the raw one with the clean schema id */
  header: Buffer;
  target: Exclude<Target, { error: string }>;
  cleanId: number;
  /** the chain of each path protected in the record (the mapped paths, then the schema's tagged fields) */
  transforms: ReadonlyMap<string, Chain>;
}

/** a record's own failure becomes its outcome; anything retriable fails the batch */
export function deadLetter(e: unknown): StreamError {
  if (e instanceof StreamError && !e.retriable) return e;
  throw e;
}

/**
 * The unmapped guard (`protection.guard`) on a record: every value of its message at a path no
 * mapping names is checked on the wire (protoFinding: maps as `{key, value}` entries; unknown
 * fields and bytes are not looked at); a finding dead-letters the record, whatever the action:
 * the schema fixes the field's type, so it cannot carry a protected string — map the field.
 */
export function guardRecord(bytes: Buffer, p: Prepared, protection: RecordProtection): void {
  const guard = p.target.tags.mapped.length === 0 ? guardFor(protection) : guardFor(protection, [...p.transforms.keys()], p.target.key);
  if (guard === undefined) return;
  const found = protoFinding(bytes, p.bodyStart, bytes.length, p.target.message, p.target.schema, guard);
  if (found !== undefined) throw unmappedError({ ...found, key: false }, ' (Protobuf: map the field to protect it)');
}

/** the raw header (magic, id, message indexes) with the clean id, then the protected message */
export function framed(p: Prepared, w: WireWriter): Buffer {
  return w.finish(p.header);
}

/** one batch of values protected together (Chain.many): a path's values under one chain */
interface Batch {
  path: string;
  chain: Chain;
  list: string[];
  results?: (string | ValueError)[];
}

/**
 * Where each value of a chunk's records went, in walk order, for all records in one pair of
 * arrays (no arrays or closures per record): the k-th value met is `batch[k].list[at[k]]`, and a
 * record's values are those from its `first` to the next record's.
 */
class Slots {
  readonly batch: Batch[] = [];
  readonly at: number[] = [];

  /** A record's values are taken back (it is dead-lettered): the last of their batches. */
  dropFrom(first: number): void {
    for (let k = first; k < this.batch.length; k++) this.batch[k]!.list.pop();
    this.batch.length = first;
    this.at.length = first;
  }
}

/**
 * Many records with each path's values protected as one batch (Chain.many): a first walk collects
 * the values (and finds the records that fail by their shape), the batch is protected, a second
 * walk writes the records with the results in the same order. A record failing both by its shape
 * (malformed, a field missing) and by a value reports its shape here; protect() reports what its
 * walk meets first.
 */
export function protectPrepared(
  values: readonly Buffer[],
  prepared: readonly (Prepared | StreamError)[],
  protection: RecordProtection,
  fields?: (string | undefined)[],
): (Buffer | StreamError)[] {
  const batches = batchesOf();
  const slots = new Slots();
  // per record: where its slots start, or why it failed
  const first: (number | StreamError)[] = [];
  let current: Prepared;
  const collect = {
    schema: undefined as unknown as ProtoSchema,
    missing: protection.missing,
    protect: (path: string, text: string) => {
      const batch = batches(current, path);
      slots.batch.push(batch);
      slots.at.push(batch.list.length);
      batch.list.push(text);
      return '';
    },
  };
  prepared.forEach((p, i) => {
    if (p instanceof StreamError) return void first.push(p);
    const from = slots.batch.length;
    current = p;
    collect.schema = p.target.schema;
    try {
      protectInto(values[i]!, p.bodyStart, values[i]!.length, p.target.plan, collect, undefined);
      guardRecord(values[i]!, p, protection);
      first.push(from);
    } catch (e) {
      slots.dropFrom(from);
      first.push(deadLetter(e));
    }
  });
  for (const batch of batches.all) if (batch.list.length) batch.results = batch.chain.many(batch.list);
  let k = 0;
  const take = {
    schema: undefined as unknown as ProtoSchema,
    missing: protection.missing,
    textsRead: true,
    protect: (path: string) => {
      const batch = slots.batch[k]!;
      if (batch.path !== path) throw new Error(`protobuf serde: the second walk met ${path} where the first met ${batch.path}`);
      const out = batch.results![slots.at[k++]!]!;
      if (out instanceof ValueError) throw new StreamError(out.code, `mapped field ${path}: value ${out.message}`);
      return out;
    },
  };
  const w = new WireWriter(EMPTY);
  return prepared.map((p, i) => {
    const from = first[i]!;
    if (p instanceof StreamError) return p;
    if (from instanceof StreamError) return from;
    k = from;
    take.schema = p.target.schema;
    try {
      protectInto(values[i]!, p.bodyStart, values[i]!.length, p.target.plan, take, w.reset(values[i]!));
      const out = framed(p, w);
      if (fields !== undefined) fields[i] = protectedPaths(slots.batch, from, k, p);
      return out;
    } catch (e) {
      return deadLetter(e);
    }
  });
}

/** the batch of a path's values under a record's chain for it (a path a schema tags may have another schema's chain) */
function batchesOf(): ((p: Prepared, path: string) => Batch) & { all: Batch[] } {
  const byPath = new Map<string, Batch[]>();
  const all: Batch[] = [];
  const of = (p: Prepared, path: string) => {
    const chain = p.transforms.get(path)!;
    let list = byPath.get(path);
    if (list === undefined) byPath.set(path, (list = []));
    for (const batch of list) if (batch.chain === chain) return batch;
    const batch: Batch = { path, chain, list: [] };
    list.push(batch);
    all.push(batch);
    return batch;
  };
  return Object.assign(of, { all });
}

/** veil.protected.fields of a record (its values are `taken[from, to)`): the paths a value was protected at, in the order of the schema's transforms (mapped paths, then tagged fields) */
function protectedPaths(taken: readonly Batch[], from: number, to: number, p: Prepared): string {
  let out = '';
  for (const path of p.transforms.keys()) {
    let met = false;
    for (let k = from; k < to && !met; k++) met = taken[k]!.path === path;
    if (met) out = out === '' ? path : `${out},${path}`;
  }
  return out;
}
