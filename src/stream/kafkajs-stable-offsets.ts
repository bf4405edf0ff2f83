import type { Kafka } from 'kafkajs';

/**
 * OffsetFetch v7 with `require_stable` (KIP-447), which kafkajs cannot send (it stops at v4),
 * sent on kafkajs' own connections. Part of the kafkajs adapter.
 *
 * Why: after a transaction commits, the group coordinator applies its offsets to its cache in a
 * task of its own; during a coordinator load (a broker restart) that task waits behind the load,
 * and a plain OffsetFetch meanwhile returns the offset from before the transaction — a new owner
 * would write that transaction's records again. With require_stable the broker answers
 * UNSTABLE_OFFSET_COMMIT while any transactional offset of the partition is pending, and this
 * retries until the offset is stable.
 */
const OFFSET_FETCH = 9;
const RETRIABLE = new Map([
  [14, 'COORDINATOR_LOAD_IN_PROGRESS'],
  [15, 'COORDINATOR_NOT_AVAILABLE'],
  [16, 'NOT_COORDINATOR'],
  [88, 'UNSTABLE_OFFSET_COMMIT'],
]);

export class OffsetFetchError extends Error {
  readonly code: string;
  readonly retriable: boolean;
  constructor(code: string, retriable: boolean, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OffsetFetchError';
    this.code = code;
    this.retriable = retriable;
  }
}

interface Connection {
  send(request: { request: unknown; response: unknown }): Promise<unknown>;
}
interface Cluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  findGroupCoordinator(options: { groupId: string }): Promise<{ connectionPool: Connection }>;
}

const uvarint = (n: number): Buffer => {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
};
const compactString = (s: string) => Buffer.concat([uvarint(Buffer.byteLength(s) + 1), Buffer.from(s)]);
const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

/** The request body; its first byte is the request header's (empty) tagged fields, which kafkajs' v1 header lacks. */
function encode(groupId: string, topic: string, partition: number): Buffer {
  return Buffer.concat([
    Buffer.from([0]),
    compactString(groupId),
    uvarint(2), compactString(topic), uvarint(2), int32(partition), Buffer.from([0]),
    Buffer.from([1]), // require_stable
    Buffer.from([0]),
  ]);
}

class Reader {
  private at = 0;
  private readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }
  uvarint(): number {
    let n = 0;
    let shift = 0;
    for (;;) {
      const b = this.buf[this.at++]!;
      n |= (b & 0x7f) << shift;
      if (b < 0x80) return n >>> 0;
      shift += 7;
    }
  }
  int16(): number {
    const v = this.buf.readInt16BE(this.at);
    this.at += 2;
    return v;
  }
  int32(): number {
    const v = this.buf.readInt32BE(this.at);
    this.at += 4;
    return v;
  }
  int64(): bigint {
    const v = this.buf.readBigInt64BE(this.at);
    this.at += 8;
    return v;
  }
  skip(n: number): void {
    this.at += n;
  }
  utf8(n: number): string {
    const s = this.buf.toString('utf8', this.at, this.at + n);
    this.at += n;
    return s;
  }
  taggedFields(): void {
    for (let i = this.uvarint(); i > 0; i--) {
      this.uvarint();
      this.skip(this.uvarint());
    }
  }
}

/** plain JSON (kafkajs logs decoded responses with JSON.stringify): the offset as a decimal string */
interface Answer {
  error: number;
  offset: string | null;
}

/** The v7 response (after kafkajs took the correlation id): header tagged fields, then the body. */
function decode(payload: Buffer, topic: string, partition: number): Answer {
  const r = new Reader(payload);
  r.taggedFields();
  r.int32(); // throttle
  let answer: Answer = { error: 0, offset: null };
  for (let t = r.uvarint() - 1; t > 0; t--) {
    const topicName = r.utf8(r.uvarint() - 1);
    for (let p = r.uvarint() - 1; p > 0; p--) {
      const index = r.int32();
      const offset = r.int64();
      r.int32(); // leader epoch
      const metadata = r.uvarint();
      if (metadata > 0) r.skip(metadata - 1);
      const error = r.int16();
      r.taggedFields();
      if (topicName === topic && index === partition) answer = { error, offset: offset < 0n ? null : offset.toString() };
    }
    r.taggedFields();
  }
  const top = r.int16();
  return top !== 0 ? { error: top, offset: null } : answer;
}

/**
 * A committed-offset reader for one kafkajs client: resolves with the partition's stable
 * committed offset (null if none), retrying while the coordinator loads, moves, or holds a
 * pending transactional offset for it — for at most `timeoutMs`.
 */
export function stableOffsetFetch(kafka: Kafka, timeoutMs = 60_000): { fetch(groupId: string, topic: string, partition: number): Promise<string | null>; close(): Promise<void> } {
  const create = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  if (!create) throw new Error('kafkajs internals changed: no private:Kafka:createCluster; pin kafkajs 2.2.x');
  const createCluster = (kafka as unknown as Record<symbol, (o: object) => Cluster>)[create]!.bind(kafka);
  let cluster: Promise<Cluster> | undefined;
  const connected = () => (cluster ??= (async () => {
    const c = createCluster({ allowAutoTopicCreation: false });
    await c.connect();
    return c;
  })().catch((e: unknown) => {
    cluster = undefined;
    throw e;
  }));
  return {
    async fetch(groupId, topic, partition) {
      const deadline = Date.now() + timeoutMs;
      let last = 'none';
      for (let attempt = 0; Date.now() < deadline; attempt++) {
        try {
          const coordinator = await (await connected()).findGroupCoordinator({ groupId });
          const body = encode(groupId, topic, partition);
          const answer = await coordinator.connectionPool.send({
            request: { apiKey: OFFSET_FETCH, apiVersion: 7, apiName: 'OffsetFetch', encode: async () => ({ buf: body, buffer: body }) },
            response: { decode: async (payload: Buffer) => decode(payload, topic, partition), parse: async (a: Answer) => a },
          }) as Answer;
          if (answer.error === 0) return answer.offset;
          const retriable = RETRIABLE.get(answer.error);
          if (!retriable) throw new OffsetFetchError(`KAFKA_ERROR_${answer.error}`, false, `OffsetFetch for ${topic}/${partition} failed with Kafka error ${answer.error}`);
          last = retriable;
        } catch (e) {
          if (e instanceof OffsetFetchError && !e.retriable) throw e;
          // kafkajs' messages name brokers and errors, never record contents
          last = `${(e as Error).name}: ${(e as Error).message}`;
        }
        await new Promise((r) => setTimeout(r, Math.min(1000, 50 * 2 ** Math.min(attempt, 5))));
      }
      throw new OffsetFetchError('OFFSET_UNSTABLE', true, `the committed offset of ${topic}/${partition} did not become stable within ${timeoutMs} ms (last: ${last})`);
    },
    async close() {
      const c = cluster;
      cluster = undefined;
      if (c) await (await c).disconnect().catch(() => undefined);
    },
  };
}
