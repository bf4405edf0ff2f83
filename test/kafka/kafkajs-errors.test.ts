import { KafkaJSConnectionError, KafkaJSNonRetriableError, KafkaJSProtocolError } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { KafkaError } from '../../src/kafka/kafka-error.ts';
import { fromKafkajs, kafkajsCall, toKafkajs } from '../../src/kafka/kafkajs-errors.ts';
import { isTransientKafkaFailure } from '../../src/kafka/start-retry.ts';
import { StreamError } from '../../src/stream/stream-error.ts';

/** kafkajs' protocol error as its protocol layer makes one (its typings know only a message) */
const protocolError = (type: string, code: number, message: string) => new KafkaJSProtocolError({ message, type, code, retriable: false } as unknown as Error);

describe('kafkajs errors as KafkaErrors (the kafkajs adapter wraps as the librdkafka adapter does)', () => {
  it('names a protocol error by its Kafka error, others by kafkajs name; retriable is kafkajs verdict; the cause is kept', () => {
    const tooLarge = protocolError('MESSAGE_TOO_LARGE', 10, 'too large');
    const e = fromKafkajs(tooLarge, 'send') as KafkaError;
    expect(e).toBeInstanceOf(KafkaError);
    expect(e).toMatchObject({ name: 'KafkaError', code: 'MESSAGE_TOO_LARGE', retriable: false, message: 'send: too large' });
    expect(e.cause).toBe(tooLarge);
    const refused = fromKafkajs(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED'), 'consumer connect') as KafkaError;
    expect(refused).toMatchObject({ code: 'ConnectionError', retriable: true });
    expect(isTransientKafkaFailure(refused)).toBe(true);
    expect(isTransientKafkaFailure(fromKafkajs(new KafkaJSNonRetriableError('Topic authorization failed'), 'subscribe'))).toBe(false);
  });

  it("passes veil's own errors and KafkaErrors unchanged", () => {
    const own = new StreamError('TRANSACTION_ABORTED', 'aborted');
    expect(fromKafkajs(own, 'commit')).toBe(own);
    const kafka = new KafkaError('STATE', 'no consumer', true);
    expect(fromKafkajs(kafka, 'commit')).toBe(kafka);
    expect(fromKafkajs('text', 'commit')).toBe('text');
  });

  it("hands kafkajs' consumer loop its own error back, and only for a KafkaError that wraps one", async () => {
    const rebalance = protocolError('REBALANCE_IN_PROGRESS', 27, 'rebalancing');
    const thrown = await kafkajsCall('heartbeat', () => Promise.reject(rebalance)).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(KafkaError);
    expect(toKafkajs(thrown)).toBe(rebalance);
    const own = new KafkaError('TOPIC_CONFIG_UNREADABLE', 'unknown', true);
    expect(toKafkajs(own)).toBe(own);
    const wrappedInStream = new StreamError('TRANSACTION_ABORTED', 'aborted', { cause: thrown });
    expect(toKafkajs(wrappedInStream)).toBe(wrappedInStream);
  });
});
