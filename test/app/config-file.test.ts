import { describe, expect, it } from 'vitest';
import { compileVeilConfigText } from '../../src/app/config-file.ts';
import { compileConfigText, type ConfigIssue } from '../../src/engine/index.ts';
import { EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';
import { pipelineYaml } from '../helpers/pipeline-yaml.ts';

/**
 * The configuration file is composed in src/app: the engine's sections and one section per layer
 * (identity, service, pipelines, responders), each with its own schema and cross-checks, reported
 * together as `file:line: severity: /pointer: message`.
 */

const PIPELINE = `
pipelines:
${pipelineYaml()}`;

const CLIENT_HASH = `scrypt$16384$8$1$${'A'.repeat(22)}$${'B'.repeat(43)}`;

function issues(text: string): [severity: string, pointer: string, message: string, line: number | undefined][] {
  return compileVeilConfigText(text).issues.map((i: ConfigIssue) => [i.severity, i.pointer, i.message, i.line]);
}

/** 1-based line of the only line containing `needle`. */
function lineOf(text: string, needle: string): number {
  const hits = text.split('\n').flatMap((l, i) => (l.includes(needle) ? [i + 1] : []));
  if (hits.length !== 1) throw new Error(`"${needle}" is on ${hits.length} lines`);
  return hits[0]!;
}

describe('the configuration file (src/app/config-file.ts)', () => {
  it('the example with a pipeline, a responder, a client and service limits compiles; each section goes to its layer', () => {
    const text = `${EXAMPLE_CONFIG_TEXT}${PIPELINE}
responders:
  desk: { requestTopic: req, replyTopics: [rep], deadLetterTopic: refused }
identity:
  clients:
    app: { secretHash: '${CLIENT_HASH}', roles: [support] }
service:
  limits: { requests: 7 }
`;
    const { config, issues: found } = compileVeilConfigText(text);
    expect(found).toEqual([]);
    expect(config!.pipelines.customers!.delivery).toBe('exactly-once');
    expect(config!.responders.desk!.replyTopics).toEqual(['rep']);
    expect(Object.keys(config!.identity.clients)).toEqual(['app']);
    expect(config!.service.limits).toMatchObject({ requests: 7, bodyBytes: 4 * 1024 * 1024 });
    expect(config!.engine.rightsContexts.map((c) => c.name)).toEqual(['ingest', 'support', 'fraud']);
  });

  it('the version hashes the whole file: a change in any section changes it', () => {
    const a = compileVeilConfigText(`${EXAMPLE_CONFIG_TEXT}${PIPELINE}`).config!.version;
    const b = compileVeilConfigText(`${EXAMPLE_CONFIG_TEXT}${PIPELINE.replace('dlq.customers', 'dlq.other')}`).config!.version;
    expect(a).toMatch(/^[0-9a-f]{12}$/);
    expect(b).not.toBe(a);
    expect(compileVeilConfigText(`${EXAMPLE_CONFIG_TEXT}${PIPELINE}`).config!.version).toBe(a);
  });

  it('schema problems of every section are reported together, each at its line', () => {
    const text = `${EXAMPLE_CONFIG_TEXT}${PIPELINE.replace('format: json', 'format: xml')}
responders:
  desk: { requestTopic: req, replyTopics: [], deadLetterTopic: refused }
service:
  limits: { bodyBytes: 10 }
identity:
  tokenTtlSeconds: 5
extra: true
`;
    expect(issues(text).map(([s, p, , line]) => [s, p, line])).toEqual([
      ['error', '/identity/tokenTtlSeconds', lineOf(text, 'tokenTtlSeconds: 5')],
      ['error', '/service/limits/bodyBytes', lineOf(text, 'bodyBytes: 10')],
      ['error', '/pipelines/customers/format', lineOf(text, 'format: xml')],
      ['error', '/responders/desk/replyTopics', lineOf(text, 'replyTopics: []')],
      ['error', '/extra', lineOf(text, 'extra: true')],
    ]);
  });

  it("cross-checks run after the engine's, in section order: engine, identity, pipelines", () => {
    const text = `${EXAMPLE_CONFIG_TEXT.replace('  pan-ff1: { type: ff1, version: 1 }', '  pan-ff1: { type: ff1 }')}${PIPELINE.replace(
      '      - { path: email, field: Customer.email }',
      '      - { path: email, field: Customer.email }\n      - { path: email, field: Customer.mail }',
    ).replace('    source: { topics: [raw.customers] }', '    source: { pattern: "raw.(" }')}
identity:
  signingKey: customer-siv
  clients:
    app: { secretHash: '${CLIENT_HASH}', roles: [auditor] }
`;
    expect(issues(text)).toEqual([
      [
        'error',
        '/keys/pan-ff1/version',
        'ff1 output has no room for a key version: pin one with version: N (see docs/design.md, "Rotation of FPE keys")',
        lineOf(text, 'pan-ff1: { type: ff1 }'),
      ],
      ['warning', '/identity/clients/app/roles/0', 'role "auditor" is used by no rights context', lineOf(text, 'roles: [auditor]')],
      ['error', '/identity/signingKey', 'key customer-siv must be of type jwt-es256', lineOf(text, 'signingKey: customer-siv')],
      ['error', '/pipelines/customers/fields/1/field', 'Customer.mail is not a configured class.property', lineOf(text, 'Customer.mail')],
      ['error', '/pipelines/customers/fields/1/path', 'path email is mapped twice', lineOf(text, 'Customer.mail')],
      ['error', '/pipelines/customers/source', 'is not a valid regular expression', lineOf(text, 'pattern: "raw.("')],
    ]);
  });

  it('pipeline topics: neither the clean nor the dead-letter topic may be a source topic', () => {
    const text = `${EXAMPLE_CONFIG_TEXT}${PIPELINE.replace('sink: { topic: clean.customers }', 'sink: { topic: raw.customers }').replace('deadLetterTopic: dlq.customers', 'deadLetterTopic: raw.customers')}`;
    expect(issues(text).map(([s, p, m]) => [s, p, m])).toEqual([
      ['error', '/pipelines/customers/sink/topic', 'the clean topic is one of the source topics'],
      ['error', '/pipelines/customers/deadLetterTopic', 'the dead-letter topic is one of the source topics'],
    ]);
  });

  it('validate (records against their JSON Schema) is for json-schema pipelines only', () => {
    const json = `${EXAMPLE_CONFIG_TEXT}${PIPELINE.replace('    roles: [ingest]', '    validate: true\n    roles: [ingest]')}`;
    expect(issues(json).map(([s, p, m]) => [s, p, m])).toEqual([
      ['error', '/pipelines/customers/validate', 'validates records against their JSON Schema: only a json-schema pipeline has one (this one is json)'],
    ]);
    expect(issues(json.replace(/format: json\b/, 'format: json-schema'))).toEqual([]);
  });

  it('warnings alone leave the configuration valid, and are kept with it', () => {
    const text = `${EXAMPLE_CONFIG_TEXT}
identity:
  clients:
    app: { secretHash: '${CLIENT_HASH}', roles: [auditor] }
`;
    const { config, issues: found } = compileVeilConfigText(text);
    expect(found.map((i) => i.severity)).toEqual(['warning']);
    expect(config!.warnings).toEqual(found);
    expect(config!.engine.warnings).toEqual([]);
  });

  it('the engine alone knows only its own sections: pipelines, identity, service and responders are not its business', () => {
    const text = `${EXAMPLE_CONFIG_TEXT}${PIPELINE}`;
    expect(compileConfigText(EXAMPLE_CONFIG_TEXT).issues).toEqual([]);
    expect(compileConfigText(text).issues.map((i) => [i.severity, i.pointer])).toEqual([['error', '/pipelines']]);
  });
});
