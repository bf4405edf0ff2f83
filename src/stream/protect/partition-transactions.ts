import type { InRecord, KafkaPort, ProducerPort, Transaction } from '../../kafka/index.ts';
import { StreamError } from '../stream-error.ts';

/** A partition's producer, fenced in one group generation, and the offset read after fencing. */
interface Slot {
  producer: ProducerPort;
  generation: number;
  /** the group's committed offset, read after this producer fenced the partition's previous owners */
  floor: bigint;
}

/**
 * The exactly-once lifecycle of a pipeline's input partitions, in one place (the argument is in
 * docs/design.md, "Exactly-once"):
 *
 * 1. Fence, then read. Before a partition's first batch in a group generation, a new
 *    transactional producer with the partition's id `<group>.<topic>.<partition>` is created:
 *    InitProducerId bumps the id's epoch, so every earlier producer of it (a zombie owner, or
 *    our own previous one) is fenced, and the coordinator first completes that id's pending
 *    transaction (commit in progress: finished; open: aborted). Only then is the group's
 *    committed offset read — it now includes every offset any owner ever committed for it.
 * 2. Skip what is done. Records of a batch below that offset were committed by an earlier owner
 *    (the consumer may have fetched from an offset read before the fence): they are dropped.
 * 3. One transaction per batch: the clean and dead-letter records and the next offset commit
 *    together, or not at all.
 * 4. Any failure inside a transaction aborts it and discards the producer; its outcome may be
 *    unknown (a commit that timed out may have committed), so the next batch re-fences and
 *    re-reads the offset — whichever way it went, step 2 makes the retry exact.
 * 5. Every group (re)join starts a new generation: every partition is fenced again before use.
 * 6. Caught up past transaction markers (a transactional input ends each transaction with one,
 *    which no batch holds): the consumer's position is committed in a transaction of offsets
 *    only, under the same fence and lock, so the group's offset reaches the high watermark and
 *    lag reads 0. It only moves the offset forward, and only over offsets holding no record.
 */
/** Where the lifecycle reports what it did: offsets and ids only, never record contents. */
export type TransactionLog = (event: 'fenced' | 'committed' | 'skipped' | 'aborted', fields: Record<string, unknown>) => void;

export class PartitionTransactions {
  private generation = 0;
  private readonly slots = new Map<string, Slot>();
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly kafka: KafkaPort;
  private readonly groupId: string;
  private readonly log: TransactionLog;

  constructor(kafka: KafkaPort, groupId: string, log: TransactionLog = () => undefined) {
    this.kafka = kafka;
    this.groupId = groupId;
    this.log = log;
  }

  transactionalId(topic: string, partition: number): string {
    return `${this.groupId}.${topic}.${partition}`;
  }

  /**
   * A (re)join of the group: a new generation; producers of partitions no longer owned close, and
   * every owned partition is fenced at once rather than at its first batch. Why: a consumer that
   * reads its start offset stable (librdkafka, KIP-447) waits while the previous owner's
   * transaction is open, and only this fence ends that transaction — waiting for a first batch
   * would wait for the transaction timeout (60 s). A failed fence is tried again at the batch.
   */
  reassigned(owned: Record<string, readonly number[]>): void {
    this.generation++;
    const keep = new Set(Object.entries(owned).flatMap(([topic, parts]) => parts.map((p) => this.transactionalId(topic, p))));
    for (const id of this.slots.keys()) if (!keep.has(id)) void this.locked(id, () => this.dispose(id));
    for (const [topic, parts] of Object.entries(owned)) {
      for (const p of parts) {
        const id = this.transactionalId(topic, p);
        void this.locked(id, () => this.fenced(id, topic, p)).catch((e: unknown) => this.log('aborted', { id, fence: 'eager', error: (e as Error).name }));
      }
    }
  }

  /**
   * Runs `produce` on the batch's records not yet committed, inside a transaction of the
   * partition's fenced producer, and commits `next` as the group's offset with them. Returns the
   * records produced (none when an earlier owner had committed them all). Throws a retriable
   * TRANSACTION_ABORTED after any failure, with the producer discarded, or `produce`'s own error
   * when it is a StreamError that is not retriable (the pipeline halts on it).
   */
  run(
    topic: string,
    partition: number,
    records: readonly InRecord[],
    next: string,
    produce: (records: InRecord[], tx: Transaction) => Promise<void>,
  ): Promise<InRecord[]> {
    const id = this.transactionalId(topic, partition);
    return this.locked(id, async () => {
      const slot = await this.fencedOrAbort(id, topic, partition);
      const todo = records.filter((r) => BigInt(r.offset) >= slot.floor);
      if (todo.length < records.length) this.log('skipped', { id, from: records[0]!.offset, count: records.length - todo.length, floor: String(slot.floor) });
      if (todo.length === 0) {
        // every record was committed before; markers past them may not have been
        await this.offsetsOnly(id, slot, topic, partition, next);
        return todo;
      }
      let tx: Transaction | undefined;
      try {
        tx = await slot.producer.transaction();
        await produce(todo, tx);
        await tx.sendOffsets(this.groupId, topic, partition, next);
        await tx.commit();
        // the group's committed offset is now `next`: a batch delivered again below it is skipped,
        // so a consumer that re-read older records can never move the group's offset back
        slot.floor = BigInt(next);
        this.log('committed', { id, from: todo[0]!.offset, to: todo.at(-1)!.offset, count: todo.length, next });
        return todo;
      } catch (e) {
        this.log('aborted', { id, from: todo[0]!.offset, error: (e as Error).name });
        await tx?.abort().catch(() => undefined);
        await this.dispose(id, slot);
        if (e instanceof StreamError && !e.retriable) throw e;
        throw new StreamError('TRANSACTION_ABORTED', `partition ${topic}/${partition}: transaction aborted; the batch is read again`, { cause: e });
      }
    });
  }

  /**
   * Commits `offset` as the group's offset of a caught-up partition, in a transaction holding
   * offsets only, when it is beyond the committed one (the consumer skipped transaction markers
   * past the last batch). Resolves with the group's committed offset afterwards. Runs between
   * the partition's batches, never beside one; a failure aborts, discards the producer and
   * rejects with a retriable TRANSACTION_ABORTED. A position reported in an earlier group
   * generation commits nothing and resolves undefined: the partition may have a new owner, whose
   * producer a fence from here would abort and whose offset this one could move back.
   */
  commitEnd(topic: string, partition: number, offset: string): Promise<string | undefined> {
    const id = this.transactionalId(topic, partition);
    const generation = this.generation;
    return this.locked(id, async () => {
      if (this.generation !== generation) return undefined;
      const slot = await this.fencedOrAbort(id, topic, partition);
      await this.offsetsOnly(id, slot, topic, partition, offset);
      return String(slot.floor);
    });
  }

  /** An offsets-only transaction moving the group's offset forward to `offset`; nothing when it is not beyond the floor. */
  private async offsetsOnly(id: string, slot: Slot, topic: string, partition: number, offset: string): Promise<void> {
    if (BigInt(offset) <= slot.floor) return;
    let tx: Transaction | undefined;
    try {
      tx = await slot.producer.transaction();
      await tx.sendOffsets(this.groupId, topic, partition, offset);
      await tx.commit();
      slot.floor = BigInt(offset);
      this.log('committed', { id, count: 0, next: offset });
    } catch (e) {
      this.log('aborted', { id, next: offset, error: (e as Error).name });
      await tx?.abort().catch(() => undefined);
      await this.dispose(id, slot);
      throw new StreamError('TRANSACTION_ABORTED', `partition ${topic}/${partition}: the offsets-only transaction aborted; it is tried again`, { cause: e });
    }
  }

  /** Closes every producer (stop, or before the consumer is re-created), each once its batch is done. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.slots.keys()].map((id) => this.locked(id, () => this.dispose(id))));
  }

  /**
   * Drops every producer at once, without waiting for the batches that hold them: recovery from a
   * stuck batch (closeAll would wait for it for ever). Their calls fail, and later batches do not
   * queue behind them. Exactly-once holds: the next batch of each partition fences a new producer,
   * which completes or aborts the old one's transaction first (step 1 above).
   */
  abandon(): void {
    const slots = [...this.slots.values()];
    this.slots.clear();
    this.locks.clear();
    for (const slot of slots) void slot.producer.disconnect().catch(() => undefined);
  }

  private async fencedOrAbort(id: string, topic: string, partition: number): Promise<Slot> {
    try {
      return await this.fenced(id, topic, partition);
    } catch (e) {
      throw new StreamError('TRANSACTION_ABORTED', `partition ${topic}/${partition}: cannot fence the transactional id`, { cause: e });
    }
  }

  private async fenced(id: string, topic: string, partition: number): Promise<Slot> {
    const current = this.slots.get(id);
    if (current && current.generation === this.generation) return current;
    if (current) await this.dispose(id);
    const generation = this.generation;
    const producer = await this.kafka.producer({ transactionalId: id });
    let committed: string | null;
    try {
      committed = await this.kafka.committedOffset(this.groupId, topic, partition);
    } catch (e) {
      await producer.disconnect().catch(() => undefined);
      throw e;
    }
    const slot = { producer, generation, floor: committed === null ? 0n : BigInt(committed) };
    this.slots.set(id, slot);
    this.log('fenced', { id, generation, floor: committed });
    return slot;
  }

  /** Closes the partition's producer (`only`: if it is still that one, not a later one fenced since). */
  private async dispose(id: string, only?: Slot): Promise<void> {
    const slot = this.slots.get(id);
    if (!slot || (only && slot !== only)) return;
    this.slots.delete(id);
    await slot.producer.disconnect().catch(() => undefined);
  }

  /** One thing at a time per partition: a batch, a fence or a disposal. */
  private locked<T>(id: string, work: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(id) ?? Promise.resolve();
    const result = previous.then(work, work);
    const tail = result.catch(() => undefined);
    this.locks.set(id, tail);
    void tail.then(() => {
      if (this.locks.get(id) === tail) this.locks.delete(id);
    });
    return result;
  }
}
