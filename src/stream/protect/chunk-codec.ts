import type { ChunkItem, ChunkOutcome } from './record-protector.ts';

/**
 * Chunks of records cross to and from protection worker threads as one transferred buffer each
 * way, not as objects: a Buffer sent by structured clone copies its whole backing ArrayBuffer
 * (often a shared pool), and a list of objects costs a clone per record.
 *
 * Items:    per record  int32 topic index, bytes key, bytes value   (bytes: int32 length, -1 = null)
 * Outcomes: see packOutcomes (their strings in a table beside the buffer)
 */
export interface PackedItems {
  topics: string[];
  data: ArrayBuffer;
}

const size = (b: Buffer | null) => 4 + (b?.length ?? 0);

function writeBytes(out: Buffer, at: number, b: Buffer | null): number {
  out.writeInt32LE(b === null ? -1 : b.length, at);
  if (b !== null) b.copy(out, at + 4);
  return at + size(b);
}

function readBytes(data: Buffer, at: number): [Buffer | null, number] {
  const length = data.readInt32LE(at);
  if (length < 0) return [null, at + 4];
  // a view: the transferred chunk buffer stays alive as long as a record refers to it
  return [data.subarray(at + 4, at + 4 + length), at + 4 + length];
}

function fresh(bytes: number): Buffer {
  // its own ArrayBuffer (never Buffer's shared pool), so that it can be transferred; not
  // zero-filled, as every byte is written before it is sent
  return Buffer.allocUnsafeSlow(bytes);
}

export function packItems(items: readonly ChunkItem[]): PackedItems {
  const topics: string[] = [];
  const index = new Map<string, number>();
  let bytes = 0;
  for (const it of items) bytes += 4 + size(it.key) + size(it.value);
  const out = fresh(bytes);
  let at = 0;
  for (const it of items) {
    let t = index.get(it.topic);
    if (t === undefined) index.set(it.topic, (t = topics.push(it.topic) - 1));
    out.writeInt32LE(t, at);
    at = writeBytes(out, writeBytes(out, at + 4, it.key), it.value);
  }
  return { topics, data: out.buffer as ArrayBuffer };
}

export function unpackItems(packed: PackedItems): ChunkItem[] {
  const data = Buffer.from(packed.data);
  const items: ChunkItem[] = [];
  for (let at = 0; at < data.length;) {
    const topic = packed.topics[data.readInt32LE(at)]!;
    const [key, next] = readBytes(data, at + 4);
    const [value, end] = readBytes(data, next);
    items.push({ topic, key, value });
    at = end;
  }
  return items;
}

/**
 * Outcomes as they cross back: their strings (codes, paths, kinds, protected-field lists: few
 * distinct ones) in a table, the rest in one transferred buffer — its first `length` bytes (a
 * recycled buffer may be larger; absent: all of it).
 */
export interface PackedOutcomes {
  strings: string[];
  data: ArrayBuffer;
  length?: number;
}

/**
 * Outcome buffers given back by the thread that read them (ProtectPool.release), for the next
 * chunks' outcomes. Why: a buffer that arrives by transfer counts as external memory of the
 * receiving thread until its collector frees it, and outcome buffers live there until their
 * batch is sent — long enough to be promoted. About 1 KB per record of them made V8 run a full
 * collection of the consumer thread's heap several times a second; a buffer transferred back
 * leaves that count at once.
 */
export class SpareBuffers {
  private readonly spares: ArrayBuffer[] = [];
  private readonly max: number;

  constructor(max = 8) {
    this.max = max;
  }

  give(data: ArrayBuffer): void {
    if (this.spares.length < this.max && !data.detached) this.spares.push(data);
  }

  /** a spare of at least `bytes`, else a new buffer of exactly that size */
  take(bytes: number): Buffer {
    for (let i = this.spares.length - 1; i >= 0; i--) {
      const spare = this.spares[i]!;
      if (spare.byteLength < bytes) continue;
      this.spares.splice(i, 1);
      return Buffer.from(spare);
    }
    return fresh(bytes);
  }
}

/** Interns strings into a table, by index: a chunk's thousand records share a handful of them. */
class StringTable {
  readonly strings: string[] = [];
  private readonly index = new Map<string, number>();

  of(s: string | undefined): number {
    if (s === undefined) return -1;
    let i = this.index.get(s);
    if (i === undefined) this.index.set(s, (i = this.strings.push(s) - 1));
    return i;
  }
}

/**
 * Per record: uint8 0, bytes key, bytes value, int32 fields, int32 reported path, int32 reported
 * kind  |  uint8 1, int32 code, int32 path, int32 kind, int32 schema id — each int32 a string
 * table index, or -1 for none.
 */
export function packOutcomes(outcomes: readonly ChunkOutcome[], spares?: SpareBuffers): PackedOutcomes {
  const table = new StringTable();
  let bytes = 0;
  for (const o of outcomes) bytes += 'code' in o ? 17 : 13 + size(o.key) + size(o.value);
  const out = spares ? spares.take(bytes) : fresh(bytes);
  let at = 0;
  for (const o of outcomes) {
    if ('code' in o) {
      out.writeUInt8(1, at);
      out.writeInt32LE(table.of(o.code), at + 1);
      out.writeInt32LE(table.of(o.path), at + 5);
      out.writeInt32LE(table.of(o.kind), at + 9);
      out.writeInt32LE(o.schema ?? -1, at + 13);
      at += 17;
    } else {
      out.writeUInt8(0, at);
      at = writeBytes(out, writeBytes(out, at + 1, o.key), o.value);
      out.writeInt32LE(table.of(o.fields), at);
      out.writeInt32LE(table.of(o.reported?.path), at + 4);
      out.writeInt32LE(table.of(o.reported?.kind), at + 8);
      at += 12;
    }
  }
  return { strings: table.strings, data: out.buffer as ArrayBuffer, length: bytes };
}

export function unpackOutcomes(packed: PackedOutcomes): ChunkOutcome[] {
  const data = Buffer.from(packed.data, 0, packed.length ?? packed.data.byteLength);
  const str = (i: number) => (i < 0 ? undefined : packed.strings[i]);
  const out: ChunkOutcome[] = [];
  for (let at = 0; at < data.length;) {
    if (data.readUInt8(at) === 1) {
      const [path, kind, schema] = [str(data.readInt32LE(at + 5)), str(data.readInt32LE(at + 9)), data.readInt32LE(at + 13)];
      out.push({
        code: str(data.readInt32LE(at + 1))!,
        ...(path === undefined ? {} : { path }),
        ...(kind === undefined ? {} : { kind }),
        ...(schema < 0 ? {} : { schema }),
      });
      at += 17;
    } else {
      const [key, next] = readBytes(data, at + 1);
      const [value, end] = readBytes(data, next);
      const fields = str(data.readInt32LE(end));
      const [path, kind] = [str(data.readInt32LE(end + 4)), str(data.readInt32LE(end + 8))];
      out.push({
        key,
        value: value!,
        ...(fields === undefined ? {} : { fields }),
        ...(path === undefined || kind === undefined ? {} : { reported: { path, kind } }),
      });
      at = end + 12;
    }
  }
  return out;
}
