import rdkafka from '@confluentinc/kafka-javascript';
import type { Producer } from '@confluentinc/kafka-javascript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// the adapter's own header encoding, tested against the native binding: an internal of src/kafka
import { encodeHeaders } from '../../../src/kafka/librdkafka-headers.ts';
import { BROKERS, createTopics, kafkaClient, topicsFor } from '../../helpers/kafka.ts';

const { Producer: NativeProducer } = rdkafka as unknown as { Producer: typeof Producer };

/**
 * The patched binding's encoded-headers path (patches/kafka-javascript-2-encoded-headers.patch)
 * reads a buffer veil builds, but it is C++ reading lengths from bytes: whatever the buffer, it
 * must refuse what does not parse exactly, never read past it, and keep the process alive.
 */
describe('librdkafka binding: encoded headers are bounds-checked (real broker)', () => {
  const kafka = kafkaClient('binding');
  const t = topicsFor('binding');
  let producer: Producer;
  beforeAll(async () => {
    await createTopics(kafka, [t.clean], 1);
    producer = new NativeProducer({ 'bootstrap.servers': BROKERS.join(','), dr_cb: false });
    await new Promise<void>((resolve, reject) => producer.connect({}, (err) => (err ? reject(err) : resolve())));
  }, 60_000);
  afterAll(async () => {
    await new Promise<void>((resolve) => producer.disconnect(5000, () => resolve()));
  });

  const valid = encodeHeaders([
    { key: 'a', value: Buffer.from('1') },
    { key: 'n', value: null },
  ]);
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n >>> 0);
    return b;
  };
  const malformed: [string, Buffer][] = [
    ['a truncated key length', Buffer.from([1, 0])],
    ['a key longer than the buffer', Buffer.concat([u32(1000), Buffer.from('abc')])],
    ['a key length near 2^32', Buffer.concat([u32(0xfffffffe), Buffer.from('abcd')])],
    ['no value length after the key', Buffer.concat([u32(1), Buffer.from('k')])],
    ['a value length below -1', Buffer.concat([u32(1), Buffer.from('k'), u32(-2)])],
    ['a value longer than the buffer', Buffer.concat([u32(1), Buffer.from('k'), u32(50), Buffer.from('xy')])],
    ['a valid list with a trailing byte', Buffer.concat([valid, Buffer.from([0])])],
    ['a valid list cut in its last value', valid.subarray(0, valid.length - 5)],
  ];
  it.each(malformed)('refuses %s', (_, headers) => {
    expect(() => producer.produce(t.clean, null, Buffer.from('v'), null, undefined, undefined, headers as never)).toThrow(/Encoded headers are malformed/);
  });

  it('still produces a well-formed list after all of them', () => {
    expect(() => producer.produce(t.clean, null, Buffer.from('v'), null, undefined, undefined, valid as never)).not.toThrow();
    expect(() => producer.produce(t.clean, null, Buffer.from('v'), null, undefined, undefined, Buffer.alloc(0) as never)).not.toThrow();
  });
});
