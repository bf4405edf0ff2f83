import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_CONFIG } from '../../../src/env/index.ts';
import { createTopics, javaConsumeRecords, kafkaClient, REGISTRY_URL, topicsFor } from '../../helpers/kafka.ts';
import { freePorts } from '../../helpers/processes.ts';
import { streamClients } from '../../helpers/stream-clients.ts';
import { JS_CASES, JS_TYPO, jsId, jsValue, PB_CASES, PB_TYPO, pbId, pbValue, type RegistryDriftCase } from '../../helpers/drift-registry-records.ts';
import { committedOffsets, consumedCount, stopStream, streamProcesses, untilConsumed } from '../../helpers/stream-processes.ts';

const PER_CASE = 10;

interface Lane {
  pipeline: string;
  format: 'protobuf' | 'json-schema';
  cases: RegistryDriftCase[];
  /** the mapped paths (the typo lanes misspell one) */
  paths: string[];
  t: { raw: string; clean: string; dlq: string; id: string };
  idOf(bytes: Buffer): number;
}

async function register(subject: string, schema: string, schemaType: string): Promise<number> {
  const res = await fetch(`${REGISTRY_URL}/subjects/${encodeURIComponent(subject)}/versions`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    body: JSON.stringify({ schemaType, schema }),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { id: number }).id;
}

const FIELDS: Record<string, string> = {
  email: 'Customer.email',
  'cards[].number': 'Customer.cardNumber',
  'profile.name': 'Customer.name',
  'cards[].expMonth': 'Customer.cardNumber',
  'cards[].exp_month': 'Customer.cardNumber',
};

function pipelineYaml(lane: Lane): string {
  return `  ${lane.pipeline}:
    source: { topics: [${lane.t.raw}] }
    sink: { topic: ${lane.t.clean} }
    deadLetterTopic: ${lane.t.dlq}
    format: ${lane.format}
    groupId: veil-drift-${lane.t.id}
    fields:
${lane.paths.map((p) => `      - { path: '${p}', field: ${FIELDS[p]} }`).join('\n')}
    tags: { PII_ID: Customer.nationalId }
    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }
`;
}

/**
 * Producers drift through a schema registry: each drift a new writer's schema version (a mapped
 * field renamed, personal fields added, nested, in a map, a field tagged with a Confluent tag the
 * pipeline does not map), a typo in a pipeline's mapping (`expMonth` for the .proto's
 * `exp_month`), beside a tag the pipeline maps (PII_ID, protected) and free text. Four pipelines
 * (Protobuf and JSON Schema, each with and without the typo) in one real `veil stream protect`
 * process with default settings: no value sent as personal data is in the clean topics' bytes —
 * key, value and headers, as Kafka's Java read_committed client reads them — each drifted record
 * is dead-lettered raw with its code, path and kind; clean + dead letters = sent, by id; the
 * refused schema versions are on /healthz and in the metrics.
 */
describe('stream: drift through a schema registry never reaches the clean topic (real broker, registry and process)', () => {
  const kafka = kafkaClient('drift-registry');
  const processes = streamProcesses();

  for (const client of streamClients()) {
    it(`${client}: Protobuf and JSON Schema drift dead-lettered with code, path and kind; mapped tags protected; nothing personal clean in clear`, async () => {
      const lane = (pipeline: string, format: Lane['format'], cases: RegistryDriftCase[], paths: string[]): Lane => ({
        pipeline,
        format,
        cases,
        paths,
        t: topicsFor(`drift-reg-${pipeline}-${client}`),
        idOf: format === 'protobuf' ? pbId : jsId,
      });
      const mapped = ['email', 'cards[].number', 'profile.name'];
      const lanes = [
        lane('pb', 'protobuf', PB_CASES, mapped),
        lane('pbtypo', 'protobuf', [PB_TYPO], ['email', 'cards[].expMonth']),
        lane('js', 'json-schema', JS_CASES, mapped),
        lane('jstypo', 'json-schema', [JS_TYPO], ['email', 'cards[].exp_month']),
      ];
      const sent = new Map<Lane, { c: RegistryDriftCase; id: number; bytes: Buffer; personal: string[]; binary: Buffer[]; schemaId: number }[]>();
      const producer = kafka.producer({ idempotent: true });
      await producer.connect();
      for (const l of lanes) {
        await createTopics(kafka, [l.t.raw, l.t.clean, l.t.dlq], 2);
        const records = [];
        for (const [k, c] of l.cases.entries()) {
          // each case its own writer's schema version (its own subject: no compatibility rule between drifts)
          const schemaId = await register(`${l.t.raw}-v${k}-value`, c.schema, l.format === 'protobuf' ? 'PROTOBUF' : 'JSON');
          for (let i = 0; i < PER_CASE; i++) {
            const id = k * 1000 + i;
            const r = c.record(id);
            records.push({
              c,
              id,
              schemaId,
              personal: r.personal,
              binary: r.binary ?? [],
              bytes: l.format === 'protobuf' ? pbValue(c.schema, schemaId, r.value) : jsValue(schemaId, r.value),
            });
          }
        }
        sent.set(l, records);
        await producer.send({ topic: l.t.raw, acks: -1, messages: records.map((r) => ({ key: `rec-${r.id}`, value: r.bytes })) });
      }
      await producer.disconnect();

      const port = await freePorts(1);
      const processor = await processes.start(
        'drift-registry',
        `${readFileSync(EXAMPLE_CONFIG, 'utf8')}\npipelines:\n${lanes.map(pipelineYaml).join('')}`,
        client,
        { port, env: { SCHEMA_REGISTRY_URL: REGISTRY_URL, VEIL_LOG_LEVEL: 'info' } },
      );
      await untilConsumed(
        kafka,
        processor,
        async (admin) => {
          for (const l of lanes) if (consumedCount(await committedOffsets(admin, `veil-drift-${l.t.id}`, l.t.raw)) < sent.get(l)!.length) return false;
          return true;
        },
        120_000,
        `${client}: the raw records processed`,
      );

      // the refused schema versions, on /healthz (healthy: the pipelines progress) and in the metrics
      const health = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as {
        status: string;
        refusedSchemas?: { pipeline: string; schemaId: number; path: string }[];
      };
      const refusedIds = (l: Lane, path: string) => [
        ...new Set(
          sent
            .get(l)!
            .filter((r) => r.c.expect.clean === false && r.c.expect.code === 'SCHEMA_PATH_UNKNOWN' && r.c.expect.path === path)
            .map((r) => r.schemaId),
        ),
      ];
      const expectedRefusals = lanes.flatMap((l) =>
        [...new Set(l.cases.flatMap((c) => (c.expect.clean === false && c.expect.code === 'SCHEMA_PATH_UNKNOWN' ? [c.expect.path] : [])))].flatMap((path) =>
          refusedIds(l, path).map((schemaId) => ({ pipeline: l.pipeline, schemaId, path })),
        ),
      );
      expect(health.status).toBe('ok');
      expect([...(health.refusedSchemas ?? [])].sort((a, b) => a.schemaId - b.schemaId)).toEqual(expectedRefusals.sort((a, b) => a.schemaId - b.schemaId));
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      for (const r of expectedRefusals)
        expect(metrics).toContain(`veil_stream_schema_refused_total{pipeline="${r.pipeline}",schema="${r.schemaId}",path="${r.path}"} ${PER_CASE}`);
      await stopStream(processor);

      const output = processor.output();
      for (const l of lanes) {
        const records = sent.get(l)!;
        const clean = await javaConsumeRecords(l.t.clean);
        const dead = await javaConsumeRecords(l.t.dlq);
        const header = (r: (typeof clean)[number], key: string) => r.headers.find((h) => h.key === key)?.value?.toString('utf8');

        // 1. no value sent as personal data is in any clean record's bytes (as text; a fixed64 also as its 8 bytes)
        const cleanBytes = clean.map((r) => Buffer.concat([r.key ?? Buffer.alloc(0), r.value, ...r.headers.map((h) => h.value ?? Buffer.alloc(0))]));
        const personal = [...new Set(records.flatMap((r) => r.personal))];
        const leaked = personal.filter((v) => cleanBytes.some((b) => b.includes(v)));
        expect(leaked, `${l.pipeline}: ${leaked.length} of ${personal.length} personal values in the clean topic`).toEqual([]);
        const leakedBinary = records.flatMap((r) => r.binary).filter((v) => cleanBytes.some((b) => b.includes(v)));
        expect(leakedBinary, `${l.pipeline}: fixed64 card numbers in the clean topic`).toEqual([]);

        // 2. clean + dead letters = sent, each once, where its case says
        const byId = new Map(records.map((r) => [r.id, r]));
        const cleanIds = clean.map((r) => l.idOf(r.value));
        const deadIds = dead.map((r) => l.idOf(r.value));
        expect(
          [...cleanIds, ...deadIds].sort((a, b) => a - b),
          l.pipeline,
        ).toEqual(records.map((r) => r.id).sort((a, b) => a - b));
        for (const r of clean) {
          const c = byId.get(l.idOf(r.value))!.c;
          expect(c.expect.clean, `${l.pipeline}: ${c.label} reached the clean topic`).toBe(true);
          if (c.expect.clean) expect(header(r, 'veil.protected.fields'), c.label).toBe(c.expect.fields);
        }
        for (const r of dead) {
          const s = byId.get(l.idOf(r.value))!;
          const e = s.c.expect;
          expect(e.clean, `${l.pipeline}: ${s.c.label} was dead-lettered (${header(r, 'veil.error.code')} ${header(r, 'veil.error.path')})`).toBe(false);
          if (e.clean) continue;
          expect([header(r, 'veil.error.code'), header(r, 'veil.error.path'), header(r, 'veil.error.kind')], `${l.pipeline}: ${s.c.label}`).toEqual([
            e.code,
            e.path,
            e.kind,
          ]);
          // the dead letter is the raw record, byte for byte
          expect(r.value.equals(s.bytes)).toBe(true);
        }

        const expectedClean = records.filter((r) => r.c.expect.clean).length;
        console.log(
          `stream drift registry (${client}, ${l.pipeline}, ${l.format}): ${records.length} sent (${l.cases.length} cases × ${PER_CASE}), ${clean.length} clean, ${dead.length} dead-lettered, ${leaked.length} of ${personal.length} personal values in clear in the clean topic; ${expectedClean} records expected clean (case variants, decoys, tagged fields)`,
        );

        // 3. the process said so without a value: one warning per refused schema id, and per unmapped path and kind
        for (const c of l.cases) {
          if (c.expect.clean) continue;
          const { code, path } = c.expect;
          const lines = output
            .split('\n')
            .filter((line) => line.includes(`"code":"${code}"`) && line.includes(`"path":"${path}"`) && line.includes(`"pipeline":"${l.pipeline}"`));
          expect(lines.length, `${l.pipeline}: a warning for ${code} at ${path}`).toBeGreaterThanOrEqual(1);
          if (code === 'SCHEMA_PATH_UNKNOWN') expect(lines.length, `${l.pipeline}: once per schema id`).toBe(1);
        }
      }
      const personal = [...new Set([...sent.values()].flat().flatMap((r) => r.personal))];
      expect(personal.filter((v) => output.includes(v))).toEqual([]);
    }, 300_000);
  }
});
