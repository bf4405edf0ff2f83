import { describe, expect, it } from 'vitest';
import { pipelineYaml } from '../../helpers/stream.ts';
import { createTopics, javaConsumeHeaders, javaProduce, kafkaClient, topicsFor } from '../../helpers/kafka.ts';
import { streamClients } from '../../helpers/stream-clients.ts';
import { committedOffsets, stopStream, streamProcesses, untilConsumed } from '../../helpers/stream-processes.ts';

type Header = { key: string; value: Buffer | null };
const h = (key: string, value: string | Buffer | null): Header => ({ key, value: typeof value === 'string' ? Buffer.from(value) : value });

/**
 * Headers pass `veil stream protect` exactly, read back by Kafka's own Java client: null values
 * stay null, repeated keys keep their order even interleaved with other keys, empty and binary
 * values stay as they are. veil replaces only its own headers (veil.pipeline,
 * veil.config.version, veil.protected.fields), appended after the others.
 */
describe('stream: record headers through veil stream protect (real broker, real process)', () => {
  const kafka = kafkaClient('headers');
  const processes = streamProcesses();

  for (const client of streamClients()) {
    it(`${client}: null, repeated and interleaved, empty and binary header values come out exactly`, async () => {
      const t = topicsFor(`headers-${client}`);
      await createTopics(kafka, [t.raw, t.clean, t.dlq], 1);
      // written by Kafka's Java client: interleaved repeated keys, a null and an empty value
      await javaProduce(t.raw, ['a:1,n:NULL,a:2,b:x,a:3,e:\tann@example.com\t{"email":"ann@example.com","id":1}']);
      const fromJava = [h('a', '1'), h('n', null), h('a', '2'), h('b', 'x'), h('a', '3'), h('e', '')];
      // written by kafkajs (patched): binary values, a null, an integer-like key after others, a spoofed veil header
      const binary = [
        h('bin', Buffer.from([0, 0xff, 0x80, 0x7f, 0x0a, 0x3a, 0x20])),
        h('n', null),
        h('bin', Buffer.alloc(0)),
        h('1', 'one'),
        h('veil.pipeline', 'spoofed'),
        h('bin', Buffer.from([0xc3, 0x28])),
        h('schlüssel-🔑', 'ü'),
      ];
      const producer = kafka.producer({ idempotent: true });
      await producer.connect();
      await producer.send({
        topic: t.raw,
        acks: -1,
        messages: [
          { key: 'bob@example.com', value: '{"email":"bob@example.com","id":2}', headers: binary },
          // no headers of its own: it carries exactly veil's (the list every such record shares)
          { key: 'cy@example.com', value: '{"email":"cy@example.com","id":3}' },
        ],
      });
      await producer.disconnect();

      const processor = await processes.start('headers', pipelineYaml(t, 'json'), client);
      await untilConsumed(
        kafka,
        processor,
        async (admin) => ((await committedOffsets(admin, `veil-test-${t.id}`, t.raw)).get(0) ?? -1) >= 3,
        60_000,
        `${client}: the raw records processed`,
      );
      await stopStream(processor);

      const clean = await javaConsumeHeaders(t.clean);
      expect(clean).toHaveLength(3);
      const byId = new Map(clean.map((r) => [(JSON.parse(r.value.toString()) as { id: number }).id, r.headers]));
      const veilHeaders = ['veil.pipeline', 'veil.config.version', 'veil.protected.fields'];
      for (const [id, sent] of [
        [1, fromJava],
        [2, binary.filter((x) => x.key !== 'veil.pipeline')],
        [3, []],
      ] as const) {
        const got = byId.get(id)!;
        expect(got.slice(0, sent.length), `record ${id}`).toEqual(sent);
        expect(got.slice(sent.length).map((x) => x.key)).toEqual(veilHeaders);
        expect(got.find((x) => x.key === 'veil.pipeline')!.value!.toString()).toBe('customers');
      }
      expect(await javaConsumeHeaders(t.dlq)).toEqual([]);
    }, 120_000);
  }
});
