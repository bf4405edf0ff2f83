import { createServer } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeCliIo, masterKeyHex, tempDir, veil } from '../helpers/cli-io.ts';
import { EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';

/**
 * `veil config validate` against the real registry (SCHEMA_REGISTRY_URL, set by vitest's global
 * setup): each registry pipeline's mapped paths against the latest schema of `<topic>-value`.
 * Subjects are unique per run, since the registry outlives runs.
 */
const url = process.env.SCHEMA_REGISTRY_URL!;
const run = `veil-cfg-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

async function register(subject: string, schema: string, schemaType: string): Promise<number> {
  const res = await fetch(`${url}/subjects/${encodeURIComponent(subject)}/versions`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    body: JSON.stringify({ schemaType, schema }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { id: number }).id;
}

const pipeline = (name: string, topic: string, format: string, paths: string[], extra = '') => `  ${name}:
    source: { topics: [${topic}] }
    sink: { topic: ${topic}.clean }
    deadLetterTopic: ${topic}.dlq
    format: ${format}
    fields:
${paths.map((p) => `      - { path: '${p}', field: Customer.email }`).join('\n')}
    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }
${extra}`;

const PROTO = `syntax = "proto3";
package shop;
message Customer {
  string email = 1;
  repeated Card cards = 2;
}
message Card { string number = 1; int32 exp_month = 2; }
`;
const AVRO = JSON.stringify({
  type: 'record',
  name: 'Customer',
  fields: [
    { name: 'email', type: 'string' },
    { name: 'cards', type: { type: 'array', items: { type: 'record', name: 'Card', fields: [{ name: 'number', type: 'string' }] } } },
  ],
});
const JSON_SCHEMA = JSON.stringify({
  type: 'object',
  additionalProperties: true,
  properties: { Email: { type: 'string' }, profile: { type: 'object', properties: { name: { type: 'string' } } } },
});

describe('veil config validate with a schema registry', () => {
  it('reports each mapped path the latest schema lacks (or cannot take) at its pointer and line; a subject not registered yet is a warning', async () => {
    await register(`${run}.pb-value`, PROTO, 'PROTOBUF');
    await register(`${run}.avro-value`, AVRO, 'AVRO');
    await register(`${run}.js-value`, JSON_SCHEMA, 'JSON');
    const cwd = await tempDir();
    const text = `${EXAMPLE_CONFIG_TEXT}\npipelines:\n${pipeline('pb', `${run}.pb`, 'protobuf', ['email', 'cards[].expMonth', 'cards[].exp_month'])}${pipeline('av', `${run}.avro`, 'avro', ['email', 'cards[].number', 'email.first'])}${pipeline('js', `${run}.js`, 'json-schema', ['email', 'profile.name', 'profile.nickname'])}${pipeline('exact', `${run}.js`, 'json-schema', ['email'], '    keys: exact\n')}${pipeline('later', `${run}.later`, 'avro', ['email'])}${pipeline('plain', `${run}.plain`, 'json', ['whatever'])}`;
    await writeFile(join(cwd, 'pipelines.yaml'), text);
    const io = fakeCliIo(cwd, { VEIL_MASTER_KEY: masterKeyHex(), SCHEMA_REGISTRY_URL: url });
    const result = await veil(io, ['config', 'validate', 'pipelines.yaml']);
    const file = join(cwd, 'pipelines.yaml');
    const lines = text.split('\n');
    const lineOf = (needle: string, after = 0) => lines.findIndex((l, i) => i >= after && l.includes(needle)) + 1;
    const out = result.out.trimEnd().split('\n');
    expect(out).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^${file}:${lineOf("path: 'cards[].expMonth'")}: error: /pipelines/pb/fields/1/path: the latest schema of subject ${run}\\.pb-value \\(id \\d+, version 1\\), message shop\\.Customer, has no field at cards\\[\\]\\.expMonth: the pipeline would dead-letter its records SCHEMA_PATH_UNKNOWN$`,
        ),
      ),
    );
    expect(out).toContainEqual(
      expect.stringMatching(
        new RegExp(`: error: /pipelines/av/fields/2/path: the latest schema of subject ${run}\\.avro-value .* does not fit email\\.first .*RECORD_MALFORMED$`),
      ),
    );
    expect(out).toContainEqual(expect.stringMatching(/: error: \/pipelines\/js\/fields\/2\/path: .* has no field at profile\.nickname: /));
    // keys: insensitive reaches the schema's Email; keys: exact does not
    expect(out.filter((l) => l.includes('/pipelines/js/fields/0/'))).toEqual([]);
    expect(out).toContainEqual(expect.stringMatching(/: error: \/pipelines\/exact\/fields\/0\/path: .* has no field at email: /));
    expect(out).toContainEqual(
      `${file}:${lineOf(`source: { topics: [${run}.later] }`)}: warning: /pipelines/later/source/topics/0: the registry holds no subject ${run}.later-value yet: mappings not checked against it`,
    );
    expect(out.filter((l) => l.includes('/pipelines/plain'))).toEqual([]);
    expect(out).toHaveLength(5);
    expect(result.code).toBe(1);
    expect(result.err).toBe(`${file}: invalid: 4 error(s), 1 warning(s)\n`);

    // the same file without the registry: nothing is checked against schemas
    const offline = await veil(fakeCliIo(cwd, { VEIL_MASTER_KEY: masterKeyHex() }), ['config', 'validate', 'pipelines.yaml']);
    expect(offline.code).toBe(0);
  });

  it("checks the latest schema's Confluent tags: a tagged field the pipeline neither maps (by tag or path) nor allows is an error", async () => {
    const tagged = PROTO.replace('string email = 1;', 'string email = 1;\n  string ssn = 3 [(confluent.field_meta).tags = "PII"];').replace(
      'package shop;',
      'package shop;\nimport "confluent/meta.proto";',
    );
    await register(`${run}.tagged-value`, tagged, 'PROTOBUF');
    const cwd = await tempDir();
    const text = `${EXAMPLE_CONFIG_TEXT}\npipelines:\n${pipeline('untagged', `${run}.tagged`, 'protobuf', ['email'])}${pipeline('tagged', `${run}.tagged`, 'protobuf', ['email'], '    tags: { PII: Customer.nationalId }\n')}${pipeline('allowed', `${run}.tagged`, 'protobuf', ['email'], '    unmapped: { allow: [ssn] }\n')}`;
    await writeFile(join(cwd, 'tags.yaml'), text);
    const result = await veil(fakeCliIo(cwd, { VEIL_MASTER_KEY: masterKeyHex(), SCHEMA_REGISTRY_URL: url }), ['config', 'validate', 'tags.yaml']);
    const out = result.out.trimEnd().split('\n');
    expect(out).toEqual([
      expect.stringMatching(
        new RegExp(
          `: error: /pipelines/untagged: the latest schema of subject ${run}\\.tagged-value .*, message shop\\.Customer, tags ssn PII, and the pipeline maps no tag of it: it would dead-letter its records UNMAPPED_PERSONAL_DATA`,
        ),
      ),
    ]);
    expect(result.code).toBe(1);
  });

  it('an unreachable registry is one warning, not a failure', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise((r) => probe.close(r));
    const cwd = await tempDir();
    await writeFile(join(cwd, 'p.yaml'), `${EXAMPLE_CONFIG_TEXT}\npipelines:\n${pipeline('av', `${run}.avro`, 'avro', ['email'])}`);
    const result = await veil(fakeCliIo(cwd, { VEIL_MASTER_KEY: masterKeyHex() }), [
      'config',
      'validate',
      'p.yaml',
      '--registry',
      `http://127.0.0.1:${port}/apis/ccompat/v7`,
    ]);
    expect(result.code).toBe(0);
    expect(result.out).toMatch(
      /: warning: \/pipelines: the schema registry cannot be reached \(.*connection refused\): mappings not checked against the writers' schemas\n/,
    );
    expect(result.out).toMatch(/valid with 1 warning\(s\)\n$/);
  });
});
