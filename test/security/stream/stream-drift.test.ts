import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTopics, javaConsumeRecords, kafkaClient, topicsFor } from '../../helpers/kafka.ts';
import { streamClients } from '../../helpers/stream-clients.ts';
import { DRIFT_CASES } from '../../helpers/drift-records.ts';
import { committedOffsets, consumedCount, stopStream, streamProcesses, untilConsumed } from '../../helpers/stream-processes.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const PER_CASE = 15;

/** config/example-pipeline.yaml as shipped, on this test's topics and group */
function examplePipeline(t: { raw: string; clean: string; dlq: string; id: string }): string {
  const text = readFileSync(join(ROOT, 'config/example-pipeline.yaml'), 'utf8')
    .replace('source: { topics: [raw.customers] }', `source: { topics: [${t.raw}] }`)
    .replace('sink: { topic: clean.customers }', `sink: { topic: ${t.clean} }\n    groupId: veil-drift-${t.id}`)
    .replace('deadLetterTopic: dlq.customers', `deadLetterTopic: ${t.dlq}`);
  expect(text).toContain(t.raw);
  return text;
}

/**
 * A producer drifts from the shipped example pipeline's mapping (renamed, moved, added fields,
 * case variants, a new nested list, an address as a key, a card as a JSON number) beside free
 * text and decoys. With default settings, no value sent as personal data reaches the clean
 * topic in clear — searched in the clean records' bytes (key, value, headers) as Kafka's Java
 * read_committed client reads them, not by veil's detectors — and each drifted record is in
 * the dead-letter topic with its code, path and kind; clean + dead letters = sent, by id.
 */
describe('stream: drift never reaches the clean topic (real broker, real process, the shipped example pipeline)', () => {
  const kafka = kafkaClient('drift');
  const processes = streamProcesses();

  for (const client of streamClients()) {
    it(`${client}: every drifted record is dead-lettered with its path and kind, case variants are protected, nothing personal is clean in clear`, async () => {
      const t = topicsFor(`drift-${client}`);
      await createTopics(kafka, [t.raw, t.clean, t.dlq], 2);
      const sent = DRIFT_CASES.flatMap((c, k) => Array.from({ length: PER_CASE }, (_, i) => ({ c, id: k * 1000 + i, ...c.record(k * 1000 + i) })));
      const producer = kafka.producer({ idempotent: true });
      await producer.connect();
      await producer.send({ topic: t.raw, acks: -1, messages: sent.map((r) => ({ key: r.key, value: r.value })) });
      await producer.disconnect();

      const processor = await processes.start('drift', examplePipeline(t), client, { env: { VEIL_LOG_LEVEL: 'info' } });
      await untilConsumed(
        kafka,
        processor,
        async (admin) => consumedCount(await committedOffsets(admin, `veil-drift-${t.id}`, t.raw)) >= sent.length,
        90_000,
        `${client}: the raw records processed`,
      );
      await stopStream(processor);

      const clean = await javaConsumeRecords(t.clean);
      const dead = await javaConsumeRecords(t.dlq);
      const header = (r: (typeof clean)[number], key: string) => r.headers.find((h) => h.key === key)?.value?.toString('utf8');
      const idOf = (value: Buffer) => (JSON.parse(value.toString('utf8')) as { id: number }).id;

      // 1. no value sent as personal data is in any clean record's bytes
      const personal = [...new Set(sent.flatMap((r) => r.personal))];
      const cleanBytes = clean.map((r) =>
        Buffer.concat([r.key ?? Buffer.alloc(0), r.value, ...r.headers.map((h) => h.value ?? Buffer.alloc(0))]).toString('utf8'),
      );
      const leaked = personal.filter((v) => cleanBytes.some((b) => b.includes(v)));
      expect(leaked, `${leaked.length} of ${personal.length} personal values in the clean topic`).toEqual([]);

      // 2. clean + dead letters = sent, each once, where its case says
      const cleanIds = clean.map((r) => idOf(r.value));
      const deadIds = dead.map((r) => idOf(r.value));
      expect([...cleanIds, ...deadIds].sort((a, b) => a - b)).toEqual(sent.map((r) => r.id).sort((a, b) => a - b));
      const byId = new Map(sent.map((r) => [r.id, r]));
      for (const r of clean) {
        const c = byId.get(idOf(r.value))!.c;
        expect(c.expect.clean, `${c.label} reached the clean topic`).toBe(true);
        if (c.expect.clean) expect(header(r, 'veil.protected.fields'), c.label).toBe(c.expect.fields);
      }
      for (const r of dead) {
        const s = byId.get(idOf(r.value))!;
        expect(s.c.expect.clean, `${s.c.label} was dead-lettered (${header(r, 'veil.error.code')})`).toBe(false);
        if (s.c.expect.clean) continue;
        expect([header(r, 'veil.error.code'), header(r, 'veil.error.path'), header(r, 'veil.error.kind')], s.c.label).toEqual([
          'UNMAPPED_PERSONAL_DATA',
          s.c.expect.path,
          s.c.expect.kind,
        ]);
        // the dead letter is the raw record, byte for byte
        expect(r.value.toString('utf8')).toBe(s.value);
      }
      for (const c of DRIFT_CASES)
        expect(cleanIds.filter((id) => byId.get(id)!.c === c).length + deadIds.filter((id) => byId.get(id)!.c === c).length, c.label).toBe(PER_CASE);
      const decoys = sent.filter((r) => r.c.expect.clean).length;
      console.log(
        `stream drift (${client}): ${sent.length} sent (${DRIFT_CASES.length} cases × ${PER_CASE}), ${clean.length} clean, ${dead.length} dead-lettered, ${leaked.length} of ${personal.length} personal values in clear in the clean topic; ${decoys} records expected clean (case variants, decoys, free text), ${clean.length - decoys} unexpected clean`,
      );

      // 3. the process said so without a value: a warning per path, never an address or card in its output
      const output = processor.output();
      expect(personal.filter((v) => output.includes(v))).toEqual([]);
      for (const c of DRIFT_CASES) {
        if (c.expect.clean) continue;
        const path = c.expect.path;
        expect(
          output.split('\n').filter((l) => l.includes('UNMAPPED_PERSONAL_DATA') && l.includes(`"path":"${path}"`)).length,
          `one warning for ${path}`,
        ).toBeGreaterThanOrEqual(1);
      }
    }, 180_000);
  }
});
