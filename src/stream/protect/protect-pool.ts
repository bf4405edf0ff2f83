import { Worker } from 'node:worker_threads';
import { packItems, unpackOutcomes, type PackedItems, type PackedOutcomes } from './chunk-codec.ts';
import type { ChunkItem, ChunkOutcome, ChunkProtector } from './record-protector.ts';
import { StreamError } from '../stream-error.ts';

/** What a protection worker answers: the packed outcomes, or the failure of the whole chunk (no values in it). */
export type WorkerReply = { id: number; outcomes: PackedOutcomes } | { id: number; error: { name: string; code?: string; retriable: boolean } };
export interface WorkerRequest {
  id: number;
  /** no reply: an outcome buffer the pool is done with, for the worker's next outcomes (SpareBuffers) */
  recycle?: ArrayBuffer;
  items?: PackedItems;
  /** re-read the keystore (`keys`) and/or bind anew under a configuration version's file */
  reload?: { keys?: boolean; configFile?: string };
}

interface Pending {
  resolve: (o: ChunkOutcome[]) => void;
  reject: (e: Error) => void;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
}

/**
 * Protection on worker threads: each chunk goes, packed into one transferred buffer, to the
 * least busy worker, which protects it with an engine of its own (it opens the keystore itself:
 * key bytes never cross threads). A worker that fails or exits fails its chunks as retriable
 * (the batch is aborted and read again) and is replaced.
 */
export class ProtectPool implements ChunkProtector {
  private readonly slots: Slot[] = [];
  private nextId = 0;
  private closed = false;
  /** each chunk's outcomes: the worker and the transferred buffer their keys and values are views of, until released */
  private readonly buffers = new WeakMap<readonly ChunkOutcome[], { slot: Slot; data: ArrayBuffer }>();
  private readonly start: (configFile: string | undefined) => Worker;
  /** the configuration version the workers were last told to bind under: a replaced worker starts on it */
  private configFile?: string;

  /**
   * `start` creates one worker running the protection entry point (the wiring knows which), on
   * the configuration file of the last reload (undefined: the one the pool was made for).
   */
  constructor(size: number, start: (configFile: string | undefined) => Worker) {
    this.start = start;
    for (let i = 0; i < size; i++) this.slots.push(this.spawn());
  }

  /** Resolves once every worker has built its engine (or rejects with the first one's failure). */
  async ready(): Promise<void> {
    await Promise.all(this.slots.map((s) => this.call(s, [])));
  }

  protectChunk(items: readonly ChunkItem[]): Promise<ChunkOutcome[]> {
    if (this.closed) return Promise.reject(new StreamError('TRANSACTION_ABORTED', 'the protection pool is closed'));
    const slot = this.slots.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
    return this.call(slot, items);
  }

  /**
   * Every worker re-reads the keystore and/or binds its pipeline under `configFile`; chunks sent
   * after this call are protected by the result. A worker that cannot is replaced (the wiring's
   * `start` then creates it on the new file), so none keeps protecting under the old version.
   */
  async reload(what: NonNullable<WorkerRequest['reload']>): Promise<void> {
    if (what.configFile) this.configFile = what.configFile;
    await Promise.all(
      this.slots.map(async (slot) => {
        try {
          await this.post(slot, { reload: what });
        } catch {
          await slot.worker.terminate();
        }
      }),
    );
  }

  /**
   * The caller is done with these outcomes (their batch was sent or failed): their buffer goes
   * back to the worker that filled it, for its next chunk. After this, their keys and values are
   * detached — empty views a Kafka adapter refuses to send (inChunks).
   */
  release(outcomes: readonly ChunkOutcome[]): void {
    const held = this.buffers.get(outcomes);
    if (!held) return;
    this.buffers.delete(outcomes);
    if (this.closed || !this.slots.includes(held.slot)) return;
    held.slot.worker.postMessage({ id: 0, recycle: held.data } satisfies WorkerRequest, [held.data]);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }

  private call(slot: Slot, items: readonly ChunkItem[]): Promise<ChunkOutcome[]> {
    const packed = packItems(items);
    return this.post(slot, { items: packed }, [packed.data]);
  }

  private post(slot: Slot, request: Omit<WorkerRequest, 'id'>, transfer: ArrayBuffer[] = []): Promise<ChunkOutcome[]> {
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      slot.pending.set(id, { resolve, reject });
      slot.worker.postMessage({ id, ...request } satisfies WorkerRequest, transfer);
    });
  }

  private spawn(): Slot {
    const slot: Slot = { worker: this.start(this.configFile), pending: new Map() };
    slot.worker.on('message', (reply: WorkerReply) => {
      const p = slot.pending.get(reply.id);
      if (!p) return;
      slot.pending.delete(reply.id);
      if ('outcomes' in reply) {
        const outcomes = unpackOutcomes(reply.outcomes);
        this.buffers.set(outcomes, { slot, data: reply.outcomes.data });
        p.resolve(outcomes);
      }
      // as in this thread: the registry's outage keeps its code, anything else aborts the batch
      else
        p.reject(
          new StreamError(
            reply.error.code === 'REGISTRY_UNAVAILABLE' ? 'REGISTRY_UNAVAILABLE' : 'TRANSACTION_ABORTED',
            `protection worker: ${reply.error.name}${reply.error.code ? ` ${reply.error.code}` : ''}`,
          ),
        );
    });
    const fail = (why: string) => {
      for (const p of slot.pending.values()) p.reject(new StreamError('TRANSACTION_ABORTED', `protection worker ${why}`));
      slot.pending.clear();
      const at = this.slots.indexOf(slot);
      if (!this.closed && at >= 0) this.slots[at] = this.spawn();
    };
    slot.worker.on('error', (e) => fail(`failed (${e.name})`));
    slot.worker.on('exit', (code) => fail(`exited (${code})`));
    return slot;
  }
}
