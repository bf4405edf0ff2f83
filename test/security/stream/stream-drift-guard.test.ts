import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { businessRecord, planted } from '../../../bench/business-corpus.ts';
import { runPython } from '../../helpers/confluent-python.ts';
import { BROKERS, createTopics, javaConsumeRecords, kafkaClient, REGISTRY_URL, topicsFor } from '../../helpers/kafka.ts';
import { freePorts } from '../../helpers/processes.ts';
import { streamClients } from '../../helpers/stream-clients.ts';
import { committedOffsets, consumedCount, stopStream, streamProcesses, untilConsumed } from '../../helpers/stream-processes.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const PER_CASE = 5;
const BUSINESS = 600;
const PLANTED = 180;

type Topics = ReturnType<typeof topicsFor>;

/** config/example-pipeline.yaml's pipeline as shipped, renamed, on these topics and group, with `format` and the guard's `action` */
function examplePipeline(name: string, t: Topics, format: string, action = 'dead-letter'): string {
  const text = readFileSync(join(ROOT, 'config/example-pipeline.yaml'), 'utf8');
  const start = text.indexOf('  customers:\n');
  const end = text.indexOf('\n# Unprotect on demand');
  expect(start).toBeGreaterThan(0);
  return text
    .slice(start, end)
    .replace('  customers:\n', `  ${name}:\n`)
    .replace('source: { topics: [raw.customers] }', `source: { topics: [${t.raw}] }`)
    .replace('sink: { topic: clean.customers }', `sink: { topic: ${t.clean} }\n    groupId: veil-guard-${t.id}`)
    .replace('deadLetterTopic: dlq.customers', `deadLetterTopic: ${t.dlq}`)
    .replace('format: json ', `format: ${format} `)
    .replace('action: dead-letter ', `action: ${action} `);
}

type Expected = Record<string, { path: string; kind: string } | 'clean'>;

/** Avro's and Protobuf's cases alike: a bytes field, and the values of a list of attributes */
const ATTRIBUTES: Expected = {
  clean: 'clean',
  bytes: { path: 'attachment', kind: 'email' },
  mobile: { path: 'attributes[].value', kind: 'phone' },
  fullName: { path: 'attributes[].value', kind: 'person-name' },
  address: { path: 'attributes[].value', kind: 'postal-address' },
  pan: { path: 'attributes[].value', kind: 'payment-card' },
};

/** where a case of drift_guard_interop.py must go: clean, or dead-lettered with this path and kind */
const EXPECT: Record<string, Expected> = {
  avro: ATTRIBUTES,
  protobuf: { ...ATTRIBUTES, unknown: { path: '#8', kind: 'email' } },
  'json-schema': {
    clean: 'clean',
    mobile: { path: 'attributes.mobile', kind: 'phone' },
    fullName: { path: 'attributes.fullName', kind: 'person-name' },
    address: { path: 'attributes.address', kind: 'postal-address' },
    pan: { path: 'attributes.pan', kind: 'payment-card' },
  },
};

type Read = Awaited<ReturnType<typeof javaConsumeRecords>>[number];
const header = (r: Read, key: string) => r.headers.find((h) => h.key === key)?.value?.toString('utf8');
const bytesOf = (r: Read) => Buffer.concat([r.key ?? Buffer.alloc(0), r.value, ...r.headers.map((h) => h.value ?? Buffer.alloc(0))]);

/**
 * The drift guard of issue 41 against the real thing: records written with confluent-kafka's own
 * serializers through the registry (Avro, Protobuf, JSON Schema) that carry personal data where
 * the decoded guard used to be blind — an email as UTF-8 in a `bytes` field, a newer Protobuf
 * writer's field the registered schema does not declare, national phones, names, addresses and a
 * Maestro 6304 card under map keys that say what they are — through pipelines shaped as the
 * shipped example; business records (GS1 codes, tracking numbers, cell ids, registration
 * numbers, account ids) through the shipped example pipeline as it is; and the guard's report
 * mode. Verified with Kafka's Java read_committed client: no personal value in a clean topic's
 * bytes, every drifted record dead-lettered with its path and kind, clean + dead letters = sent
 * by id, no business record refused.
 */
describe('stream: the drift guard in decoded records, on business records, and in report mode (real broker, registry, serializers and process)', () => {
  const kafka = kafkaClient('drift-guard');
  const processes = streamProcesses();

  for (const client of streamClients()) {
    it(`${client}: bytes, unknown fields and map keys dead-lettered in all three formats; business records pass; report mode passes and counts`, async () => {
      const dataDir = await processes.dir('drift-guard');
      const formats = ['avro', 'protobuf', 'json-schema'] as const;
      const lanes = formats.map((format) => ({ format, t: topicsFor(`guard-${format}-${client}`) }));
      const business = topicsFor(`guard-business-${client}`);
      const report = topicsFor(`guard-report-${client}`);
      for (const t of [...lanes.map((l) => l.t), business, report]) await createTopics(kafka, [t.raw, t.clean, t.dlq], 2);

      // the decoded formats, through confluent-kafka's serializers
      const sent = new Map<string, { id: number; case: string; personal: string[] }[]>();
      for (const { format, t } of lanes) {
        const out = await runPython('drift_guard_interop.py', ['produce', format, BROKERS.join(','), REGISTRY_URL, t.raw, dataDir, String(PER_CASE)], {
          timeout: 180_000,
        });
        sent.set(
          format,
          out
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as { id: number; case: string; personal: string[] }),
        );
      }
      // business records and planted ones (JSON, as the shipped example pipeline reads)
      const producer = kafka.producer({ idempotent: true });
      await producer.connect();
      const businessSent = [
        ...Array.from({ length: BUSINESS }, (_, i) => ({ id: i, planted: undefined, value: JSON.stringify({ id: i, ...businessRecord(i) }) })),
        ...Array.from({ length: PLANTED }, (_, k) => {
          const p = planted(k);
          return { id: 100_000 + k, planted: p, value: JSON.stringify({ id: 100_000 + k, ...p.record }) };
        }),
      ];
      const message = (r: { id: number; value: string }) => ({ key: `buyer.${r.id}@example.com`, value: r.value, headers: { rid: String(r.id) } });
      await producer.send({ topic: business.raw, acks: -1, messages: businessSent.map(message) });
      const reportSent = businessSent.filter((r) => r.planted !== undefined);
      await producer.send({ topic: report.raw, acks: -1, messages: reportSent.map(message) });
      await producer.disconnect();

      const pipelines = [
        ...lanes.map(({ format, t }) => examplePipeline(format.replace('-', ''), t, format)),
        examplePipeline('business', business, 'json'),
        examplePipeline('reporting', report, 'json', 'report'),
      ];
      const example = readFileSync(join(ROOT, 'config/example-pipeline.yaml'), 'utf8');
      const configText = `${example.slice(0, example.indexOf('\npipelines:'))}\npipelines:\n${pipelines.join('\n')}\n`;
      const port = await freePorts(1);
      const processor = await processes.start('drift-guard', configText, client, {
        dataDir,
        port,
        env: { SCHEMA_REGISTRY_URL: REGISTRY_URL, VEIL_LOG_LEVEL: 'info' },
      });
      const expected = new Map<Topics, number>([
        ...lanes.map((l) => [l.t, sent.get(l.format)!.length] as const),
        [business, businessSent.length],
        [report, reportSent.length],
      ]);
      await untilConsumed(
        kafka,
        processor,
        async (admin) => {
          for (const [t, n] of expected) if (consumedCount(await committedOffsets(admin, `veil-guard-${t.id}`, t.raw)) < n) return false;
          return true;
        },
        180_000,
        `${client}: the raw records processed`,
      );
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      await stopStream(processor);
      const output = processor.output();

      // 1. the decoded formats: each drifted record dead-lettered with its path and kind, none in clear
      for (const { format, t } of lanes) {
        const records = sent.get(format)!;
        const clean = await javaConsumeRecords(t.clean);
        const dead = await javaConsumeRecords(t.dlq);
        const cleanBytes = clean.map(bytesOf);
        const leaked = [...new Set(records.flatMap((r) => r.personal))].filter((v) => cleanBytes.some((b) => b.includes(v)));
        expect(leaked, `${format}: personal values in the clean topic`).toEqual([]);
        const rid = (r: Read) => Number(header(r, 'rid'));
        expect(
          [...clean, ...dead].map(rid).sort((a, b) => a - b),
          `${format}: clean + dead letters = sent`,
        ).toEqual(records.map((r) => r.id).sort((a, b) => a - b));
        const byId = new Map(records.map((r) => [r.id, r]));
        for (const r of clean) expect(EXPECT[format]![byId.get(rid(r))!.case], `${format}: ${byId.get(rid(r))!.case} reached the clean topic`).toBe('clean');
        for (const r of dead) {
          const c = byId.get(rid(r))!.case;
          expect([header(r, 'veil.error.code'), header(r, 'veil.error.path'), header(r, 'veil.error.kind')], `${format}: ${c}`).toEqual([
            'UNMAPPED_PERSONAL_DATA',
            (EXPECT[format]![c] as { path: string }).path,
            (EXPECT[format]![c] as { kind: string }).kind,
          ]);
        }
        expect(clean.length, `${format}: the clean case's records`).toBe(PER_CASE);
      }

      // 2. business records through the shipped example pipeline: none refused; every planted value dead-lettered where it sits
      const bClean = await javaConsumeRecords(business.clean);
      const bDead = await javaConsumeRecords(business.dlq);
      const refusedBusiness = bDead
        .filter((r) => Number(header(r, 'rid')) < 100_000)
        .map((r) => `${header(r, 'veil.error.path')}:${header(r, 'veil.error.kind')}`);
      expect(refusedBusiness, 'business records refused').toEqual([]);
      expect(bClean.length + bDead.length).toBe(businessSent.length);
      const plantedById = new Map(businessSent.filter((r) => r.planted).map((r) => [r.id, r.planted!]));
      expect(bDead.map((r) => [header(r, 'veil.error.path'), header(r, 'veil.error.kind')]).sort()).toEqual(
        [...plantedById.values()].map((p) => [p.path, p.kind]).sort(),
      );

      // 3. report mode: every record passes (what it finds in clear: it protects nothing), counted by path and kind, logged once per path
      const rClean = await javaConsumeRecords(report.clean);
      expect(rClean.map((r) => Number(header(r, 'rid'))).sort((a, b) => a - b)).toEqual(reportSent.map((r) => r.id).sort((a, b) => a - b));
      expect(await javaConsumeRecords(report.dlq)).toEqual([]);
      const reported = [...metrics.matchAll(/^veil_stream_unmapped_reported_total\{pipeline="reporting",path="([^"]*)",kind="([^"]*)"\} (\d+)$/gm)].reduce(
        (n, m) => n + Number(m[3]),
        0,
      );
      expect(reported).toBe(reportSent.length);
      expect(metrics).not.toMatch(/veil_stream_unmapped_findings_total\{pipeline="reporting"/);
      expect(output).toMatch(/"pipeline":"reporting".*report mode passes its records in clear/);
      // the mapped fields are still protected in report mode
      expect(rClean.some((r) => r.value.toString('utf8').includes('buyer.'))).toBe(false);
      // no value in the log
      expect(output).not.toMatch(/@example\.(com|org|net)/);
    }, 600_000);
  }
});
