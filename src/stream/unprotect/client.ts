import { randomUUID } from 'node:crypto';
import type { TransformRequest, TransformResponse } from '../../engine/index.ts';
import type { Problem } from '../../errors/problem.ts';
import { headerValue, type ConsumerPort, type KafkaPort, type ProducerPort } from '../../kafka/index.ts';
import { REPLY_STATUS_HEADER, REQUEST_HEADERS } from './protocol.ts';

export type UnprotectReply = { status: 200; body: TransformResponse } | { status: number; body: { error: Problem } };

/**
 * For applications: sends transform requests over Kafka and awaits each reply by correlation id.
 * Its reply consumer uses a group of its own, starts at the latest offset and is assigned before
 * the first request goes out, so no reply is missed; replies for other requesters (or repeated
 * after a responder restart) are ignored.
 */
export class UnprotectClient {
  private readonly pending = new Map<string, (reply: UnprotectReply) => void>();
  private readonly kafka: KafkaPort;
  private readonly requestTopic: string;
  private readonly replyTopic: string;
  private producer?: ProducerPort;
  private consumer?: ConsumerPort;

  private constructor(kafka: KafkaPort, requestTopic: string, replyTopic: string) {
    this.kafka = kafka;
    this.requestTopic = requestTopic;
    this.replyTopic = replyTopic;
  }

  static async connect(options: { kafka: KafkaPort; requestTopic: string; replyTopic: string; readyTimeoutMs?: number }): Promise<UnprotectClient> {
    const client = new UnprotectClient(options.kafka, options.requestTopic, options.replyTopic);
    client.consumer = options.kafka.consumer({ groupId: `veil-unprotect-client-${randomUUID()}`, readCommitted: false });
    const assigned = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('reply consumer was not assigned in time')), options.readyTimeoutMs ?? 30_000);
      client.consumer!.on({
        assigned: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
    await client.consumer.subscribe([options.replyTopic], false);
    await client.consumer.run(async (batch) => {
      for (const r of batch.records) {
        const id = headerValue(r.headers, REQUEST_HEADERS.correlationId)?.toString('utf8');
        const resolve = id ? client.pending.get(id) : undefined;
        if (!resolve || !r.value) continue;
        client.pending.delete(id!);
        resolve({ status: Number(headerValue(r.headers, REPLY_STATUS_HEADER)?.toString('utf8') ?? 500), body: JSON.parse(r.value.toString('utf8')) });
      }
    });
    await assigned;
    client.producer = await options.kafka.producer({});
    return client;
  }

  /** Sends one request and resolves with its reply, or rejects after timeoutMs. */
  async request(body: TransformRequest, options: { token: string; timeoutMs?: number; deadline?: Date }): Promise<UnprotectReply> {
    const correlationId = randomUUID();
    const timeoutMs = options.timeoutMs ?? 10_000;
    const reply = new Promise<UnprotectReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(correlationId);
        reject(new Error(`no reply within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(correlationId, (r) => {
        clearTimeout(timer);
        resolve(r);
      });
    });
    await this.producer!.send([
      {
        topic: this.requestTopic,
        key: Buffer.from(correlationId),
        value: Buffer.from(JSON.stringify(body)),
        headers: [
          { key: REQUEST_HEADERS.authorization, value: Buffer.from(`Bearer ${options.token}`) },
          { key: REQUEST_HEADERS.correlationId, value: Buffer.from(correlationId) },
          { key: REQUEST_HEADERS.replyTo, value: Buffer.from(this.replyTopic) },
          ...(options.deadline ? [{ key: REQUEST_HEADERS.deadline, value: Buffer.from(String(options.deadline.getTime())) }] : []),
        ],
      },
    ]);
    return reply;
  }

  async close(): Promise<void> {
    await this.consumer?.disconnect();
    await this.producer?.disconnect();
  }
}
