import type { ChunkItem, ChunkOutcome } from './record-protector.ts';

/**
 * Chunks of records cross to and from protection worker threads as one transferred buffer each
 * way, not as objects: a Buffer sent by structured clone copies its whole backing ArrayBuffer
 * (often a shared pool), and a list of objects costs a clone per record.
 *
 * Items:    per record  int32 topic index, bytes key, bytes value   (bytes: int32 length, -1 = null)
 * Outcomes: per record  uint8 0 then bytes key, bytes value, bytes fields  |  uint8 1 then bytes code, bytes path, bytes kind, bytes schema id (UTF-8; -1 = absent)
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
  for (let at = 0; at < data.length; ) {
    const topic = packed.topics[data.readInt32LE(at)]!;
    const [key, next] = readBytes(data, at + 4);
    const [value, end] = readBytes(data, next);
    items.push({ topic, key, value });
    at = end;
  }
  return items;
}

const text = (s: string | undefined) => (s === undefined ? null : Buffer.from(s, 'utf8'));
const str = (b: Buffer | null) => (b === null ? undefined : b.toString('utf8'));

/** each outcome's parts as bytes, in the order they are written */
function outcomeParts(o: ChunkOutcome): (Buffer | null)[] {
  return 'code' in o ? [text(o.code), text(o.path), text(o.kind), text(o.schema === undefined ? undefined : String(o.schema))] : [o.key, o.value, text(o.fields)];
}

export function packOutcomes(outcomes: readonly ChunkOutcome[]): ArrayBuffer {
  const parts = outcomes.map(outcomeParts);
  let bytes = 0;
  for (const p of parts) bytes += 1 + p.reduce((n, b) => n + size(b), 0);
  const out = fresh(bytes);
  let at = 0;
  outcomes.forEach((o, i) => {
    out.writeUInt8('code' in o ? 1 : 0, at);
    at++;
    for (const b of parts[i]!) at = writeBytes(out, at, b);
  });
  return out.buffer as ArrayBuffer;
}

export function unpackOutcomes(packed: ArrayBuffer): ChunkOutcome[] {
  const data = Buffer.from(packed);
  const out: ChunkOutcome[] = [];
  for (let at = 0; at < data.length; ) {
    const failed = data.readUInt8(at) === 1;
    const [a, n1] = readBytes(data, at + 1);
    const [b, n2] = readBytes(data, n1);
    const [c, n3] = readBytes(data, n2);
    if (failed) {
      const path = str(b);
      const kind = str(c);
      const [d, end] = readBytes(data, n3);
      const schema = str(d);
      out.push({ code: a!.toString('utf8'), ...(path === undefined ? {} : { path }), ...(kind === undefined ? {} : { kind }), ...(schema === undefined ? {} : { schema: Number(schema) }) });
      at = end;
    } else {
      const fields = str(c);
      out.push({ key: a, value: b!, ...(fields === undefined ? {} : { fields }) });
      at = n3;
    }
  }
  return out;
}
