import type { Batch, CaughtUp, ConsumerEvents, ConsumerPort, KafkaPort, LookAhead, OutRecord, ProducerPort } from '../../src/kafka/index.ts';

/**
 * An in-memory KafkaPort that models what exactly-once relies on: a transactional id's newest
 * producer fences the older ones (their commits fail), and a committed transaction's offset is
 * what committedOffset returns. The same behaviour against a real broker is in
 * test/integration/stream/stream-*.test.ts.
 */
export class FakeKafka implements KafkaPort {
  handler?: (batch: Batch, heartbeat: () => Promise<void>) => Promise<void>;
  lookAhead?: LookAhead;
  caughtUp?: CaughtUp;
  /** transactions committed, records or not (an offsets-only one counts) */
  transactionsCommitted = 0;
  events: ConsumerEvents = {};
  committed: OutRecord[] = [];
  offsets = new Map<string, string>();
  aborted = 0;
  producersCreated = 0;
  consumersCreated = 0;
  /** the next commit fails; `landed` says whether it committed all the same (an unknown outcome) */
  failNextCommit?: { landed: boolean };
  /** the next commit never answers (a stuck call) */
  hangNextCommit = false;
  producersDisconnected = 0;
  limits = new Map<string, number>();
  private epochs = new Map<string, number>();

  consumer(): ConsumerPort {
    this.consumersCreated++;
    return {
      subscribe: async () => undefined,
      run: async (h, ahead, caughtUp) => {
        this.handler = h;
        this.lookAhead = ahead;
        this.caughtUp = caughtUp;
      },
      commitOffsets: async (t, p, offset) => void this.offsets.set(`${t}/${p}`, offset),
      disconnect: async () => undefined,
      on: (e) => void (this.events = { ...this.events, ...e }),
    };
  }

  async producer(options: { transactionalId?: string }): Promise<ProducerPort> {
    this.producersCreated++;
    const id = options.transactionalId ?? '';
    const epoch = (this.epochs.get(id) ?? 0) + 1;
    this.epochs.set(id, epoch);
    const fenced = () => this.epochs.get(id) !== epoch;
    return {
      transaction: async () => {
        const pending: OutRecord[] = [];
        let offset: [string, string] | undefined;
        return {
          send: async (r) => {
            if (fenced()) throw new Error('producer fenced');
            pending.push(...r);
          },
          sendOffsets: async (_g, t, p, o) => void (offset = [`${t}/${p}`, o]),
          commit: async () => {
            if (fenced()) throw new Error('producer fenced');
            if (this.hangNextCommit) {
              this.hangNextCommit = false;
              return new Promise<void>(() => undefined);
            }
            const failure = this.failNextCommit;
            this.failNextCommit = undefined;
            if (!failure || failure.landed) {
              this.transactionsCommitted++;
              this.committed.push(...pending);
              if (offset) this.offsets.set(...offset);
            }
            if (failure) throw new Error('request timed out');
          },
          abort: async () => void this.aborted++,
        };
      },
      send: async (r) => void this.committed.push(...r),
      disconnect: async () => void this.producersDisconnected++,
    };
  }

  async committedOffset(_groupId: string, topic: string, partition: number): Promise<string | null> {
    return this.offsets.get(`${topic}/${partition}`) ?? null;
  }

  async maxMessageBytes(topic: string): Promise<number> {
    return this.limits.get(topic) ?? 1_048_588;
  }

  disconnect = async () => undefined;
}
