import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import rdkafka from '@confluentinc/kafka-javascript';
import type { AdminClient as AdminClientType, IAdminClient, KafkaConsumer, LibrdKafkaError, Producer } from '@confluentinc/kafka-javascript';
import { inChunks, MAX_SEND_BYTES } from './send-chunks.ts';
import { librdkafkaConsumer, type NativeConsumers } from './librdkafka-consumer.ts';
import type { KafkaLog, KafkaPort, OutRecord, ProducerPort, Transaction } from './ports.ts';
import type { KafkaConnection } from './client-settings.ts';
import { librdkafkaSecurity } from './librdkafka-security.ts';
import { reportDenied } from './denied.ts';
import { describeConfigsLimits, type TopicLimits } from './kafkajs-topic-limits.ts';
import { encodeHeaders } from './librdkafka-headers.ts';
import { KafkaError } from './kafka-error.ts';
import { CONNECT_TIMEOUT_MS, fromLibrdkafka, refusalInLog } from './librdkafka-errors.ts';

const { Producer: NativeProducer, AdminClient } = rdkafka as unknown as { Producer: typeof Producer; AdminClient: typeof AdminClientType };

export interface LibrdkafkaOptions {
  /** the cluster, its security, and static group membership (group.instance.id: one consumer per group in a process) */
  connection: KafkaConnection;
  clientId: string;
  log?: KafkaLog;
  sessionTimeoutMs?: number;
  /** records handed to one batch handler at most */
  maxBatchRecords?: number;
}

const TRANSACTION_TIMEOUT_MS = 60_000;
const TRANSACTION_LINGER_MS = 20;
/** how long a transactional call (init, send offsets, commit, abort) may take before it fails (retriable) */
const CALL_TIMEOUT_MS = 30_000;
/**
 * librdkafka's own cap on a record (its message.max.bytes; default 1,000,000, below what a topic may
 * take): a record larger than it is refused by the client before any broker sees it, however large
 * the topic's limit — and a batch of it would be retried for ever. So it is raised, and the port
 * reports no topic limit above it (less a margin for framing): a larger record is dead-lettered
 * RECORD_TOO_LARGE, as one over the topic's limit is.
 */
const CLIENT_MAX_BYTES = 64 * 1024 * 1024;
const CLIENT_MAX_RECORD_BYTES = CLIENT_MAX_BYTES - 64 * 1024;
/** the broker codes of an offset fetch that mean "ask again" (load in progress, moved, unstable) */
const RETRY_OFFSET_FETCH = new Set([14, 15, 16, 88]);

/**
 * KafkaPort over librdkafka (Confluent's @confluentinc/kafka-javascript, its node-rdkafka
 * API): Java-grade transactions — KIP-447 group metadata in sendOffsetsToTransaction, stable
 * (require_stable) offset fetches, per-producer aborted-transaction filtering for
 * read_committed — and headers kept as an ordered list (null values too: see
 * patches/kafka-javascript-*.patch). One transactional producer per input partition,
 * as with kafkajs, so PartitionTransactions' fencing argument holds unchanged; KIP-447 adds that a
 * member of an old group generation cannot commit offsets at all.
 */
export function librdkafkaPort(options: LibrdkafkaOptions): KafkaPort {
  checkPatchedBinding();
  const { connection } = options;
  const log = options.log ?? (() => undefined);
  const common: NativeConfig = {
    'bootstrap.servers': connection.brokers.join(','),
    'client.id': options.clientId,
    'socket.keepalive.enable': true,
    ...librdkafkaSecurity(connection),
  };
  // topic limits need DescribeConfigs, which the librdkafka binding lacks (see kafkajs-topic-limits.ts)
  const limits = describeConfigsLimits({ clientId: `${options.clientId}-admin`, connection });
  const consumers: NativeConsumers = new Map();
  let admin: Promise<{ client: IAdminClient; producer: Producer }> | undefined;
  // the offset reads' admin client rides on a producer of its own (AdminClient.createFrom): an admin
  // client made alone never set its OAUTHBEARER token and timed out every call (librdkafka 2.15.1
  // through the binding), while a producer's connection authenticates as the pipelines' do
  const connectedAdmin = async () =>
    (
      await (admin ??= (async () => {
        const producer = new NativeProducer({ ...common, 'client.id': `${options.clientId}-offsets` } as never);
        producer.on('event.error', clientError(log, 'offsets client error'));
        producer.on('event.log', clientLog(log));
        (producer as unknown as NodeJS.EventEmitter).on('error', clientError(log, 'offsets client error'));
        await new Promise<void>((resolve, reject) =>
          producer.connect({ timeout: CONNECT_TIMEOUT_MS }, (err) => (err ? reject(fromLibrdkafka(err, 'offsets client connect')) : resolve())),
        );
        producer.setPollInBackground(true);
        return { client: AdminClient.createFrom(producer), producer };
      })().catch((e: unknown) => {
        admin = undefined;
        throw e;
      }))
    ).client;
  return {
    consumer: ({ groupId, readCommitted }) =>
      librdkafkaConsumer({
        common,
        groupId,
        readCommitted,
        registry: consumers,
        log,
        onError: clientError(log, 'consumer error'),
        onLog: clientLog(log),
        sessionTimeoutMs: options.sessionTimeoutMs ?? 30_000,
        ...(connection.groupInstanceId ? { groupInstanceId: connection.groupInstanceId } : {}),
        maxBatchRecords: options.maxBatchRecords ?? 2000,
      }),
    producer: async ({ transactionalId }) =>
      producerPort(
        await connectProducer(common, transactionalId, clientError(log, 'producer error'), clientLog(log)),
        limits,
        consumers,
        transactionalId !== undefined,
      ),
    async committedOffset(groupId, topic, partition) {
      const client = await connectedAdmin();
      const deadline = Date.now() + CALL_TIMEOUT_MS * 2;
      for (let attempt = 1; ; attempt++) {
        try {
          return await fetchStableOffset(client, groupId, topic, partition);
        } catch (e) {
          const code = (e as KafkaError).brokerCode;
          if (!(code !== undefined && RETRY_OFFSET_FETCH.has(code)) && !(e as KafkaError).retriable) throw e;
          if (Date.now() > deadline) throw e;
          await new Promise((r) => setTimeout(r, Math.min(50 * attempt, 500)));
        }
      }
    },
    maxMessageBytes: async (topic) => Math.min(await limits.maxMessageBytes(topic), CLIENT_MAX_RECORD_BYTES),
    async disconnect() {
      await limits.close();
      const a = admin;
      admin = undefined;
      if (a) await disconnect((await a.catch(() => undefined))?.producer);
    },
  };
}

/**
 * The binding must be built with veil's patches (null header values, headers encoded in one
 * buffer, a fetch's bytes in one buffer; docs/kafka-clients.md): without them a null header is
 * written empty and encoded headers are refused. scripts/build-librdkafka.sh stamps the build
 * with the patches' hash; a build without that stamp is refused.
 */
function checkPatchedBinding(): void {
  const patches = fileURLToPath(new URL('../../patches/', import.meta.url));
  const hash = createHash('sha256');
  for (const f of readdirSync(patches)
    .filter((n) => /^kafka-javascript-.*\.patch$/.test(n))
    .sort())
    hash.update(readFileSync(join(patches, f)));
  const want = hash.digest('hex');
  const pkg = dirname(createRequire(import.meta.url).resolve('@confluentinc/kafka-javascript/package.json'));
  let stamp = '';
  try {
    stamp = readFileSync(join(pkg, 'build', 'veil-build.stamp'), 'utf8').trim();
  } catch {
    // no stamp: not built by veil's script
  }
  if (stamp !== want)
    throw new KafkaError(
      'CLIENT_UNPATCHED',
      "the librdkafka binding was not built with veil's patches: run `sh scripts/build-librdkafka.sh` (npm ci does)",
      false,
    );
}

function fetchStableOffset(client: IAdminClient, groupId: string, topic: string, partition: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    client.listConsumerGroupOffsets([{ groupId, partitions: [{ topic, partition }] }], { requireStableOffsets: true, timeout: 10_000 }, (err, result) => {
      if (err) return reject(fromLibrdkafka(err, 'offset fetch'));
      const group = result?.[0];
      const p = group?.partitions?.find((x) => x.topic === topic && x.partition === partition);
      const error = (group as { error?: LibrdKafkaError } | undefined)?.error ?? (p as { error?: LibrdKafkaError } | undefined)?.error;
      if (error) return reject(fromLibrdkafka(error, 'offset fetch'));
      const offset = (p as { offset?: number } | undefined)?.offset;
      resolve(offset === undefined || offset < 0 ? null : String(offset));
    });
  });
}

const call = (what: string, run: (cb: (err: LibrdKafkaError | null | undefined) => void) => void): Promise<void> =>
  new Promise((resolve, reject) => run((err) => (err ? reject(fromLibrdkafka(err, what)) : resolve())));

/** librdkafka's configuration: its properties, and the token callback of OAUTHBEARER */
type NativeConfig = Record<string, unknown>;

/**
 * What a client's error events become: a log line with the code (never the message's
 * credentials: librdkafka's messages name brokers and mechanisms), and a refusal of this client
 * (SASL, TLS certificate, authorization) told to the process's listeners (denied.ts) — librdkafka would
 * otherwise retry it for ever in the background.
 */
export function clientError(log: KafkaLog, what: string): (err: LibrdKafkaError) => void {
  return (err) => {
    // the OAUTHBEARER callback's own failure comes back as it was thrown (a KafkaError already)
    const error = (err as unknown) instanceof KafkaError ? (err as unknown as KafkaError) : fromLibrdkafka(err, what);
    log('warn', what, { code: error.code, fatal: error.fatal, ...(error.denied ? { denied: true } : {}) });
    reportDenied(error);
  };
}

/** A client's log lines: its errors (severity 3 and below) logged, a refusal among them reported (the reason is only there). */
export function clientLog(log: KafkaLog): (line: { severity: number; fac: string; message: string }) => void {
  return ({ severity, fac, message }) => {
    if (severity > 3) return;
    log('warn', 'librdkafka', { facility: fac, reason: message.replace(/^\[thrd:[^\]]*\]: /, '') });
    reportDenied(refusalInLog(severity, message));
  };
}

async function connectProducer(
  common: NativeConfig,
  transactionalId: string | undefined,
  onError: (err: LibrdKafkaError) => void,
  onLog: ReturnType<typeof clientLog>,
): Promise<Producer> {
  const producer = new NativeProducer({
    ...common,
    dr_cb: true,
    // a transaction reports failed records only (its commit fails if any record failed, so a
    // report per record would buy nothing); a plain send counts every record's report
    'delivery.report.only.error': transactionalId !== undefined,
    // Java-compatible: murmur2 of the key, as Java producers and veil's kafkajs adapter pick partitions
    partitioner: 'murmur2_random',
    'enable.idempotence': true,
    // a transaction's records are sent at the latest by its commit's flush, so waiting only lets
    // librdkafka fill its batches: at 2 ms, while a pipeline queued a batch, it sent many small
    // requests (its threads 7–9 µs of CPU per record against 2–3 at 20 ms, in a 4-partition run).
    // A plain send waits for its records' reports, so it keeps the short wait
    'linger.ms': transactionalId ? TRANSACTION_LINGER_MS : 2,
    // a transaction's records are queued without waiting between chunks when every topic takes a
    // batch this large (send-chunks.ts): librdkafka then keeps each batch under every limit
    'batch.size': BATCH_BYTES,
    'message.max.bytes': CLIENT_MAX_BYTES,
    'queue.buffering.max.messages': 1_000_000,
    ...(transactionalId ? { 'transactional.id': transactionalId, 'transaction.timeout.ms': TRANSACTION_TIMEOUT_MS } : {}),
  } as never);
  producer.on('event.error', onError);
  producer.on('event.log', onLog);
  // the OAUTHBEARER token callback's failures arrive as 'error' (an EventEmitter error without a listener would throw)
  (producer as unknown as NodeJS.EventEmitter).on('error', onError);
  await new Promise<void>((resolve, reject) =>
    producer.connect({ timeout: CONNECT_TIMEOUT_MS }, (err) => (err ? reject(fromLibrdkafka(err, 'producer connect')) : resolve())),
  );
  producer.setPollInBackground(true);
  if (transactionalId) {
    // InitProducerId: fences every earlier producer of the id and completes its pending
    // transaction before this returns (PartitionTransactions reads the committed offset after)
    try {
      await call('init transactions', (cb) => producer.initTransactions(CALL_TIMEOUT_MS, cb));
    } catch (e) {
      await disconnect(producer);
      throw e;
    }
  }
  return producer;
}

function disconnect(producer: Producer | undefined): Promise<void> {
  return new Promise((resolve) => (producer ? producer.disconnect(5000, () => resolve()) : resolve()));
}

/**
 * One send's deliveries. Transactional: failed records only (the commit is the proof of the
 * rest). Plain: every record's report is counted, and the send resolves after the last one.
 */
interface Delivery {
  error?: KafkaError;
  pending: number;
  settle?: () => void;
}

const FLUSH_TIMEOUT_MS = 60_000;
/** librdkafka's cap on one record batch (its batch.size, framing included; a larger record goes alone) */
const BATCH_BYTES = MAX_SEND_BYTES;

/**
 * Why a transactional record carries no opaque: the binding keeps a record's opaque in a V8
 * persistent handle that only its delivery report frees, and with `delivery.report.only.error`
 * a delivered record has no report — one leaked handle (and its Delivery) per record, and GC
 * work growing with them. So a transaction has one Delivery for all its records: an error report
 * belongs to the open transaction (after an abort the producer is discarded, so no report of an
 * earlier transaction reaches a later one). Its records go unsettled where every topic takes a
 * whole batch (inChunks), and a delivery error then fails the commit.
 */
function producerPort(producer: Producer, limits: TopicLimits, consumers: NativeConsumers, transactional: boolean): ProducerPort {
  let current: Delivery | undefined;
  /** the topics the open transaction sent to: their limits are read again after a failed commit */
  const sentTo = new Set<string>();
  producer.on('delivery-report', (err, report) => {
    const d = transactional ? current : (report as { opaque?: Delivery }).opaque;
    if (!d) return;
    if (err) d.error ??= fromLibrdkafka(err, 'delivery');
    if (d.settle && --d.pending === 0) d.settle();
  });
  const sendChunk = async (chunk: OutRecord[], settle: boolean): Promise<void> => {
    const delivery: Delivery = transactional ? current! : { pending: chunk.length };
    const delivered = transactional ? undefined : new Promise<void>((resolve) => (delivery.settle = resolve));
    const opaque = transactional ? undefined : delivery;
    for (let i = 0; i < chunk.length; i++) {
      if (transactional) sentTo.add(chunk[i]!.topic);
      const queued = produceOne(producer, chunk[i]!, delivery, opaque);
      if (queued === 'queued' || (queued === 'full' && (await produceWhenRoom(producer, chunk[i]!, delivery, opaque)))) continue;
      delivery.pending -= chunk.length - i;
      if (delivery.pending === 0) delivery.settle?.();
      break;
    }
    // a settled chunk: the next one is queued only once this one is acknowledged, so no batch mixes the two
    if (delivered) await delivered;
    else if (settle) await call('flush', (cb) => producer.flush(FLUSH_TIMEOUT_MS, cb));
    if (delivery.error) throw delivery.error;
  };
  const send = (records: OutRecord[]) => {
    if (transactional && !current) throw new KafkaError('STATE', 'a transactional producer sends inside a transaction', false);
    return inChunks(
      records,
      (t) => limits.maxMessageBytes(t),
      sendChunk,
      (e) => (e as KafkaError).code === 'MSG_SIZE_TOO_LARGE',
      (t) => limits.forget(t),
      transactional ? BATCH_BYTES : undefined,
    );
  };
  const commit = async () => {
    try {
      await call('commit', (cb) => producer.commitTransaction(TRANSACTION_TIMEOUT_MS, cb));
    } catch (e) {
      // an unsettled record's failure (a topic's limit lowered under us, say) fails the commit:
      // its own error says more, and the limits are read again before the batch is retried
      for (const t of sentTo) limits.forget(t);
      throw current?.error ?? e;
    } finally {
      current = undefined;
      sentTo.clear();
    }
  };
  return {
    async transaction(): Promise<Transaction> {
      if (!transactional) throw new KafkaError('STATE', 'not a transactional producer', false);
      await call('begin transaction', (cb) => producer.beginTransaction(cb));
      current = { pending: 0 };
      sentTo.clear();
      return {
        send,
        async sendOffsets(groupId, topic, partition, offset) {
          const consumer = consumers.get(groupId);
          if (!consumer) throw new KafkaError('STATE', `no consumer of group ${groupId} in this process`, true);
          await call('send offsets', (cb) =>
            producer.sendOffsetsToTransaction([{ topic, partition, offset: Number(offset) }], consumer as KafkaConsumer, CALL_TIMEOUT_MS, cb),
          );
        },
        commit,
        abort: () => call('abort', (cb) => producer.abortTransaction(CALL_TIMEOUT_MS, cb)).finally(() => (current = undefined)),
      };
    },
    send,
    disconnect: () => disconnect(producer),
  };
}

/** librdkafka's ERR__QUEUE_FULL: its local queue is full (it drains in the background) */
const QUEUE_FULL = -184;

/**
 * Queues one record without waiting: 'full' while librdkafka's local queue is full (it drains in
 * the background), 'refused' when refused for good (the delivery holds the error).
 */
function produceOne(producer: Producer, r: OutRecord, delivery: Delivery, opaque: Delivery | undefined): 'queued' | 'full' | 'refused' {
  try {
    producer.produce(
      r.topic,
      null,
      r.value as Buffer,
      r.key ?? undefined,
      undefined,
      opaque,
      r.headers.length ? (encodeHeaders(r.headers) as never) : undefined,
    );
    return 'queued';
  } catch (e) {
    if ((e as LibrdKafkaError).code === QUEUE_FULL) return 'full';
    delivery.error ??= fromLibrdkafka(e as LibrdKafkaError, 'produce');
    return 'refused';
  }
}

/**
 * The same record again once the local queue has room, in order (never the next record first);
 * false when it was refused or the queue stayed full (the delivery holds the error).
 */
async function produceWhenRoom(producer: Producer, r: OutRecord, delivery: Delivery, opaque: Delivery | undefined): Promise<boolean> {
  for (let attempt = 0; attempt < 2000; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    const queued = produceOne(producer, r, delivery, opaque);
    if (queued !== 'full') return queued === 'queued';
  }
  delivery.error ??= new KafkaError('QUEUE_FULL', 'the local produce queue stayed full', true);
  return false;
}
