import { describe, expect, it } from 'vitest';
import { compileConfig, compileConfigText, formatIssue, type ConfigIssue } from '../../src/engine/index.ts';
import { EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';

/**
 * A small valid configuration. Every entry that a test breaks sits on a line of its own, so the
 * expected line of an issue is found by searching the text (`lineOf`).
 */
const BASE = `version: 1
description: config tests
keys:
  k-siv: { type: aes-siv }
  k-ff1: { type: ff1, version: 1 }
  k-mac: { type: hmac-sha256 }
sequences:
  det:
    steps:
      - { type: aes-siv, key: k-siv }
  fpe:
    steps:
      - { type: ff1, key: k-ff1, alphabet: digits }
  mac:
    steps:
      - { type: hmac-sha256, key: k-mac }
  tail:
    steps:
      - { type: mask, keepLast: 2 }
classes:
  Person:
    properties:
      email: { protect: det }
      phone: { protect: fpe, actions: { Mask: tail } }
      tag: { protect: mac, unprotect: none }
rightsContexts:
  admin:
    evidences: { Role: admin }
    grants:
      - { actions: [Protect, Unprotect, Mask], fields: ['Person.*'] }
processingContexts:
  protect: { evidences: { Action: Protect } }
  unprotect: { evidences: { Action: Unprotect } }
  mask: { evidences: { Action: Mask } }
`;

/** BASE with one exact line replaced (the line must exist once). */
function edit(from: string, to: string, text = BASE): string {
  const count = text.split(from).length - 1;
  if (count !== 1) throw new Error(`"${from}" occurs ${count} times in the base text`);
  return text.replace(from, to);
}

/** 1-based line of the only line containing `needle`. */
function lineOf(text: string, needle: string): number {
  const lines = text.split('\n');
  const hits = lines.flatMap((l, i) => (l.includes(needle) ? [i + 1] : []));
  if (hits.length !== 1) throw new Error(`"${needle}" is on ${hits.length} lines`);
  return hits[0]!;
}

function issuesOf(text: string): ConfigIssue[] {
  return compileConfigText(text).issues;
}

/** severity and pointer of every issue, in order: asserts nothing extra was reported */
function summary(text: string): [string, string][] {
  return issuesOf(text).map((i) => [i.severity, i.pointer]);
}

/**
 * The only issue of `text` is an error at `pointer` (or at one of several), its message holding
 * each of `mentions` (a text it contains, or a pattern it matches), on the line holding `on` when
 * given. Returns the issue.
 */
function expectOnlyError(text: string, pointer: string | readonly string[], mentions: readonly (string | RegExp)[] = [], on?: string): ConfigIssue {
  const issue = onlyError(text);
  if (typeof pointer === 'string') expect(issue.pointer).toBe(pointer);
  else expect(pointer).toContain(issue.pointer);
  for (const m of mentions) {
    if (typeof m === 'string') expect(issue.message).toContain(m);
    else expect(issue.message).toMatch(m);
  }
  if (on !== undefined) expect(issue.line).toBe(lineOf(text, on));
  return issue;
}

/** The only issue of the text; it must make the configuration invalid. */
function onlyError(text: string): ConfigIssue {
  const result = compileConfigText(text);
  expect(result.config).toBeUndefined();
  expect(result.issues.map((i) => [i.severity, i.pointer])).toHaveLength(1);
  const issue = result.issues[0]!;
  expect(issue.severity).toBe('error');
  return issue;
}

describe('config/example.yaml', () => {
  it('compiles with no errors and no warnings', () => {
    const { config, issues } = compileConfigText(EXAMPLE_CONFIG_TEXT);
    expect(issues).toEqual([]);
    expect(config).toBeDefined();
    expect(config!.warnings).toEqual([]);
  });

  it('compiles to the keys, sequences, fields and contexts the file declares', () => {
    const config = compileConfigText(EXAMPLE_CONFIG_TEXT).config!;
    expect([...config.keys.values()].map((k) => [k.name, k.id, k.type, k.version])).toEqual([
      ['customer-siv', 'customer-siv', 'aes-siv', undefined],
      ['customer-gcm', 'customer-gcm', 'aes-gcm', undefined],
      ['pan-ff1', 'pan-ff1', 'ff1', 1],
      ['pseudonym', 'pseudonym', 'hmac-sha256', undefined],
    ]);
    expect([...config.sequences.values()].map((s) => [s.name, s.reversible])).toEqual([
      ['email-deterministic', true],
      ['card-fpe', true],
      ['card-mask', false],
      ['national-id-fpe', true],
      ['name-randomized', true],
      ['name-pseudonym', false],
    ]);
    const customer = config.classes.get('Customer')!;
    const actions = (p: string) => Object.fromEntries([...customer.get(p)!.actions].map(([a, plan]) => [a, `${plan.sequence}/${plan.direction}`]));
    expect(actions('email')).toEqual({ Protect: 'email-deterministic/forward', Unprotect: 'email-deterministic/inverse' });
    expect(actions('cardNumber')).toEqual({ Protect: 'card-fpe/forward', Unprotect: 'card-fpe/inverse', Mask: 'card-mask/forward' });
    expect(actions('name')).toEqual({ Protect: 'name-randomized/forward', Unprotect: 'name-randomized/inverse', Pseudonymize: 'name-pseudonym/forward' });
    expect(actions('segmentKey')).toEqual({ Protect: 'name-pseudonym/forward' });
    expect(config.rightsContexts.map((c) => [c.name, c.evidences])).toEqual([
      ['ingest', [['Role', 'ingest']]],
      ['support', [['Role', 'support']]],
      ['fraud', [['Role', 'fraud']]],
    ]);
    expect(config.processingContexts.map((c) => [c.name, c.action])).toEqual([
      ['protect', 'Protect'],
      ['unprotect', 'Unprotect'],
      ['mask', 'Mask'],
      ['pseudonymize', 'Pseudonymize'],
    ]);
    expect([...config.rightsEvidenceNames]).toEqual(['Role']);
    expect([...config.processingEvidenceNames]).toEqual(['Action']);
  });

  it('the same configuration as JSON compiles too (YAML is a superset of JSON)', () => {
    const json = JSON.stringify(
      {
        version: 1,
        keys: { k: { type: 'aes-siv' } },
        sequences: { s: { steps: [{ type: 'aes-siv', key: 'k' }] } },
        classes: { C: { properties: { p: { protect: 's' } } } },
        rightsContexts: { r: { evidences: { Role: 'r' }, grants: [{ actions: ['Protect'], fields: ['C.p'] }] } },
        processingContexts: { protect: { evidences: { Action: 'Protect' } } },
      },
      null,
      2,
    );
    expect(compileConfigText(json)).toMatchObject({ issues: [], config: expect.anything() });
  });

  it('the test base configuration compiles with no issues', () => {
    expect(issuesOf(BASE)).toEqual([]);
  });
});

describe('configuration errors: YAML', () => {
  it('a YAML syntax error is reported with its line', () => {
    const text = edit('  k-mac: { type: hmac-sha256 }', '  k-mac: { type: hmac-sha256');
    const issue = expectOnlyError(text, '', [/flow map|}/i]);
    const broken = lineOf(text, 'k-mac: {');
    expect(issue.line).toBeGreaterThanOrEqual(broken);
    expect(issue.line).toBeLessThanOrEqual(broken + 1);
  });

  it('an unterminated quoted string is reported with a line (where the parser notices it)', () => {
    const text = edit('description: config tests', 'description: "config tests');
    const issues = issuesOf(text);
    expect(issues.length).toBeGreaterThan(0);
    expect(compileConfigText(text).config).toBeUndefined();
    for (const issue of issues) {
      expect(issue.severity).toBe('error');
      expect(issue.line).toBeGreaterThanOrEqual(lineOf(text, 'description:'));
    }
  });

  it('a duplicate mapping key is an error on the line of the second occurrence', () => {
    const text = edit('  k-mac: { type: hmac-sha256 }', '  k-mac: { type: hmac-sha256 }\n  k-mac: { type: aes-gcm }');
    const issue = onlyError(text);
    expect(issue.message).toMatch(/unique/i);
    expect(issue.line).toBe(lineOf(text, 'k-mac: { type: aes-gcm }'));
  });

  it('tabs as indentation and multiple documents are errors, not crashes', () => {
    expect(issuesOf('version: 1\nkeys:\n\t a: 1\n')[0]).toMatchObject({ severity: 'error', pointer: '' });
    expect(issuesOf('version: 1\n---\nversion: 1\n')[0]).toMatchObject({ severity: 'error', message: expect.stringMatching(/documents/) });
  });

  it('an alias bomb is reported as an issue; compileConfigText does not throw', () => {
    const bomb = [
      'version: 1',
      'a: &a ["x","x","x","x","x","x","x","x","x","x"]',
      'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]',
      'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]',
      'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]',
      'e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]',
    ].join('\n');
    let result: ReturnType<typeof compileConfigText> | undefined;
    expect(() => (result = compileConfigText(bomb))).not.toThrow();
    expect(result!.config).toBeUndefined();
    expect(result!.issues.some((i) => i.severity === 'error')).toBe(true);
  });

  it('an alias to an undefined anchor is reported as an issue; compileConfigText does not throw', () => {
    let result: ReturnType<typeof compileConfigText> | undefined;
    expect(() => (result = compileConfigText(edit('keys:\n', 'keys: *nowhere\n')))).not.toThrow();
    expect(result!.issues.some((i) => i.severity === 'error')).toBe(true);
  });

  it('aliases within the limit are fine: a shared grant list', () => {
    const text = edit(
      "      - { actions: [Protect, Unprotect, Mask], fields: ['Person.*'] }",
      "      - &all { actions: [Protect, Unprotect, Mask], fields: ['Person.*'] }\n  auditor:\n    evidences: { Role: auditor }\n    grants: [*all]",
    );
    const { config, issues } = compileConfigText(text);
    expect(issues).toEqual([]);
    expect(config!.rightsContexts.map((c) => c.name)).toEqual(['admin', 'auditor']);
  });

  it.each([
    ['an empty file', ''],
    ['a comment only', '# nothing\n'],
    ['a scalar', '42\n'],
    ['a list', '- version: 1\n'],
  ])('%s is not a configuration: error at pointer ""', (_what, text) => {
    expectOnlyError(text, '', [/object/]);
  });
});

describe('configuration errors: schema (strict)', () => {
  it('an unknown top-level field is an error naming the field, on its line', () => {
    const text = `${BASE}extras: true\n`;
    expectOnlyError(text, ['', '/extras'], ['extras'], 'extras: true');
  });

  it('an unknown field of a property is an error at the property, naming the field', () => {
    const text = edit('      email: { protect: det }', '      email: { protect: det, secret: yes }');
    expectOnlyError(text, ['/classes/Person/properties/email', '/classes/Person/properties/email/secret'], ['secret'], 'secret: yes');
  });

  it('an unknown step type is an error at /type listing the known types', () => {
    const text = edit('      - { type: aes-siv, key: k-siv }', '      - { type: rot13, key: k-siv }');
    const issue = expectOnlyError(text, '/sequences/det/steps/0/type');
    for (const type of ['aes-siv', 'aes-gcm', 'ff1', 'ff3-1', 'hmac-sha256', 'mask', 'redact']) expect(issue.message).toContain(type);
    expect(issue.line).toBe(lineOf(text, 'rot13'));
  });

  it('a field of another step type is an error (strict steps)', () => {
    const text = edit('      - { type: aes-siv, key: k-siv }', '      - { type: aes-siv, key: k-siv, alphabet: digits }');
    expectOnlyError(text, ['/sequences/det/steps/0', '/sequences/det/steps/0/alphabet'], ['alphabet'], 'k-siv, alphabet: digits');
  });

  it('version must be 1', () => {
    const text = edit('version: 1\ndescription', 'version: 2\ndescription');
    expect(onlyError(text)).toMatchObject({ pointer: '/version', line: 1 });
  });

  it('an unknown key type is an error at /keys/<name>/type', () => {
    const text = edit('  k-mac: { type: hmac-sha256 }', '  k-mac: { type: hmac-md5 }');
    expect(onlyError(text)).toMatchObject({ pointer: '/keys/k-mac/type', line: lineOf(text, 'hmac-md5') });
  });

  it('a missing required node is located at its nearest ancestor line', () => {
    const text = edit('  fpe:\n    steps:\n      - { type: ff1, key: k-ff1, alphabet: digits }\n', '  fpe:\n    description: no steps\n');
    expectOnlyError(text, '/sequences/fpe/steps', [], 'description: no steps');
  });

  it('a grant field pattern that is not Class.property, Class.* or * is a schema error', () => {
    const text = edit("fields: ['Person.*']", "fields: ['Person']");
    expectOnlyError(text, '/rightsContexts/admin/grants/0/fields/0', [/Class\.property/]);
  });

  it('an explicit keystore id must be lowercase', () => {
    const text = edit('  k-mac: { type: hmac-sha256 }', '  k-mac: { type: hmac-sha256, id: Mac_Key }');
    expect(onlyError(text)).toMatchObject({ pointer: '/keys/k-mac/id', message: expect.stringMatching(/lowercase/) });
  });

  it('reports every schema error at once', () => {
    let text = edit('version: 1\ndescription', 'version: 3\ndescription');
    text = edit('  k-mac: { type: hmac-sha256 }', '  k-mac: { type: hmac-md5 }', text);
    text = edit('      - { type: mask, keepLast: 2 }', '      - { type: mask, keepLast: -1 }', text);
    text = edit('      tag: { protect: mac, unprotect: none }', '      tag: { protect: mac, unprotect: never }', text);
    const issues = issuesOf(text);
    expect(issues.map((i) => i.pointer).sort()).toEqual([
      '/classes/Person/properties/tag/unprotect',
      '/keys/k-mac/type',
      '/sequences/tail/steps/0/keepLast',
      '/version',
    ]);
    expect(issues.every((i) => i.severity === 'error' && typeof i.line === 'number')).toBe(true);
    expect(issues.find((i) => i.pointer === '/sequences/tail/steps/0/keepLast')!.line).toBe(lineOf(text, 'keepLast: -1'));
  });
});

describe('configuration errors: cross-references', () => {
  it('a step key reference not defined under keys', () => {
    const text = edit('      - { type: aes-siv, key: k-siv }', '      - { type: aes-siv, key: k-nope }');
    expectOnlyError(text, '/sequences/det/steps/0/key', ['k-nope', 'keys'], 'k-nope');
  });

  it('a key of the wrong type for the step', () => {
    const text = edit('      - { type: aes-siv, key: k-siv }', '      - { type: aes-siv, key: k-mac }');
    expectOnlyError(text, '/sequences/det/steps/0/key', ['aes-siv', 'hmac-sha256', 'k-mac']);
  });

  it.each(['ff1', 'ff3-1'])('a %s key without a pinned version', (type) => {
    const text = edit('  k-mac: { type: hmac-sha256 }', `  k-mac: { type: hmac-sha256 }\n  k-fpe: { type: ${type} }`);
    expectOnlyError(text, '/keys/k-fpe/version', [type, /version: N/], 'k-fpe');
  });

  it('a property whose protect sequence is irreversible, with the default unprotect: inverse → mention unprotect: none', () => {
    const text = edit('      tag: { protect: mac, unprotect: none }', '      tag: { protect: mac }');
    expectOnlyError(text, '/classes/Person/properties/tag/protect', ['unprotect: none', 'hmac-sha256'], 'tag: {');
  });

  it('names the irreversible step of a longer sequence', () => {
    let text = edit('      - { type: mask, keepLast: 2 }', '      - { type: aes-siv, key: k-siv }\n      - { type: mask, keepLast: 2 }');
    text = edit('      email: { protect: det }', '      email: { protect: tail, unprotect: inverse }', text);
    expectOnlyError(text, '/classes/Person/properties/email/protect', [/step 1 \(mask\)/]);
  });

  it('a property protected by an unknown sequence is reported once', () => {
    const text = edit('      email: { protect: det }', '      email: { protect: nope }');
    expectOnlyError(text, '/classes/Person/properties/email/protect', ['"nope"'], 'protect: nope');
  });

  it('an action bound to an unknown sequence', () => {
    const text = edit('      email: { protect: det }', '      email: { protect: det, actions: { Peek: nope } }');
    expect(onlyError(text)).toMatchObject({ pointer: '/classes/Person/properties/email/actions/Peek', message: expect.stringContaining('"nope"') });
  });

  it('an action bound to an irreversible sequence with direction inverse', () => {
    const text = edit('      email: { protect: det }', '      email: { protect: det, actions: { Peek: { sequence: tail, direction: inverse } } }');
    const issue = expectOnlyError(text, '/classes/Person/properties/email/actions/Peek', [/cannot be inverted/, /mask/]);
    expect(issue.message).not.toContain('unprotect: none');
    expect(issue.line).toBe(lineOf(text, 'Peek'));
  });

  it('an action bound to a reversible sequence with direction inverse compiles', () => {
    const text = edit('      email: { protect: det }', '      email: { protect: det, actions: { Reveal: { sequence: det, direction: inverse } } }');
    const { config, issues } = compileConfigText(text);
    expect(issues).toEqual([]);
    expect(config!.classes.get('Person')!.get('email')!.actions.get('Reveal')).toEqual({ sequence: 'det', direction: 'inverse' });
  });

  it('a broken action binding is reported once, not again as an unknown action where grants and contexts use it', () => {
    const text = edit(
      '      phone: { protect: fpe, actions: { Mask: tail } }',
      '      phone: { protect: fpe, actions: { Mask: { sequence: tail, direction: inverse } } }',
    );
    expect(summary(text)).toEqual([['error', '/classes/Person/properties/phone/actions/Mask']]);
  });

  it('Protect or Unprotect under actions is an error', () => {
    const text = edit('      email: { protect: det }', '      email: { protect: det, actions: { Unprotect: det } }');
    expect(onlyError(text)).toMatchObject({
      pointer: '/classes/Person/properties/email/actions/Unprotect',
      message: expect.stringMatching(/protect\/unprotect/),
    });
  });

  it('a grant with an unknown action', () => {
    const text = edit('[Protect, Unprotect, Mask]', '[Protect, Unprotect, Mask, Frobnicate]');
    expectOnlyError(text, '/rightsContexts/admin/grants/0/actions/3', ['Frobnicate'], 'Frobnicate');
  });

  it('a grant field pattern that matches no configured class/property', () => {
    const text = edit("fields: ['Person.*']", "fields: ['Person.*', 'Persn.email', 'Person.fax', 'Nobody.*']");
    const issues = issuesOf(text);
    expect(issues.map((i) => [i.severity, i.pointer])).toEqual([
      ['error', '/rightsContexts/admin/grants/0/fields/1'],
      ['error', '/rightsContexts/admin/grants/0/fields/2'],
      ['error', '/rightsContexts/admin/grants/0/fields/3'],
    ]);
    expect(issues.map((i) => i.message)).toEqual([
      expect.stringContaining('Persn.email'),
      expect.stringContaining('Person.fax'),
      expect.stringContaining('Nobody.*'),
    ]);
  });

  it('two processing contexts with the same evidences (in any order)', () => {
    let text = edit('  mask: { evidences: { Action: Mask } }', '  mask: { evidences: { Action: Mask } }\n  again: { evidences: { Action: Protect } }');
    let issue = onlyError(text);
    expect(issue.pointer).toBe('/processingContexts/again/evidences');
    expect(issue.message).toContain('"protect"');
    expect(issue.line).toBe(lineOf(text, 'again:'));

    text = edit(
      '  mask: { evidences: { Action: Mask } }',
      '  mask: { evidences: { Action: Mask } }\n  web: { evidences: { Channel: web, Action: Mask } }\n  web2:\n    evidences: { Action: Mask, Channel: web }\n    action: Mask',
    );
    issue = onlyError(text);
    expect(issue.pointer).toBe('/processingContexts/web2/evidences');
    expect(issue.message).toContain('"web"');
  });

  it('a processing context whose action contradicts its Action evidence', () => {
    const text = edit(
      '  mask: { evidences: { Action: Mask } }',
      '  mask: { evidences: { Action: Mask } }\n  sneaky: { evidences: { Action: Unprotect, Channel: web }, action: Protect }',
    );
    expectOnlyError(text, '/processingContexts/sneaky/action', [/contradicts/]);
  });

  it('a rights context with no evidences', () => {
    const text = edit('    evidences: { Role: admin }', '    evidences: {}');
    expectOnlyError(text, '/rightsContexts/admin/evidences', [/at least one evidence/], 'evidences: {}');
  });

  it('a processing context with no action (no action field, no Action evidence)', () => {
    const text = edit('  mask: { evidences: { Action: Mask } }', '  mask: { evidences: { Action: Mask } }\n  web: { evidences: { Channel: web } }');
    expectOnlyError(text, '/processingContexts/web', [/action/], 'web:');
  });

  it('a processing context naming an action nothing configures', () => {
    const text = edit(
      '  mask: { evidences: { Action: Mask } }',
      '  mask: { evidences: { Action: Mask } }\n  web: { evidences: { Channel: web }, action: Shred }',
    );
    expect(onlyError(text)).toMatchObject({ pointer: '/processingContexts/web/action', message: expect.stringContaining('Shred') });
  });

  it('a processing context with no evidences', () => {
    const text = edit('  mask: { evidences: { Action: Mask } }', '  mask: { evidences: { Action: Mask } }\n  any: { evidences: {}, action: Protect }');
    expect(onlyError(text)).toMatchObject({ pointer: '/processingContexts/any/evidences' });
  });

  it('a processing context with an action field and other evidences compiles to that action', () => {
    const text = edit(
      '  mask: { evidences: { Action: Mask } }',
      '  mask: { evidences: { Action: Mask } }\n  web: { evidences: { Channel: web }, action: Mask }',
    );
    const { config, issues } = compileConfigText(text);
    expect(issues).toEqual([]);
    expect(config!.processingContexts.find((c) => c.name === 'web')).toEqual({ name: 'web', evidences: [['Channel', 'web']], action: 'Mask' });
    expect([...config!.processingEvidenceNames].sort()).toEqual(['Action', 'Channel']);
  });
});

describe('configuration errors: FPE alphabets', () => {
  const FPE_STEP = '      - { type: ff1, key: k-ff1, alphabet: digits }';

  it('luhn with a non-digits alphabet', () => {
    const text = edit(FPE_STEP, '      - { type: ff1, key: k-ff1, alphabet: alnum, luhn: true }');
    expectOnlyError(text, '/sequences/fpe/steps/0/luhn', [/digits/], 'luhn: true');
  });

  it('luhn with the digits alphabet (named, default or spelled out) compiles', () => {
    for (const step of [
      '{ type: ff1, key: k-ff1, alphabet: digits, luhn: true }',
      '{ type: ff1, key: k-ff1, luhn: true }',
      '{ type: ff1, key: k-ff1, customAlphabet: "0123456789", luhn: true }',
    ]) {
      expect(issuesOf(edit(FPE_STEP, `      - ${step}`))).toEqual([]);
    }
  });

  it('a customAlphabet holding a character twice', () => {
    const text = edit(FPE_STEP, '      - { type: ff1, key: k-ff1, customAlphabet: "abcdefa" }');
    expectOnlyError(text, '/sequences/fpe/steps/0/customAlphabet', [/twice/], 'abcdefa');
  });

  it.each(['x', ''])('a customAlphabet of fewer than 2 characters (%j)', (alphabet) => {
    const text = edit(FPE_STEP, `      - { type: ff1, key: k-ff1, customAlphabet: "${alphabet}" }`);
    expectOnlyError(text, '/sequences/fpe/steps/0/customAlphabet', [/at least 2/]);
  });

  it('a customAlphabet of non-ASCII characters compiles', () => {
    expect(issuesOf(edit(FPE_STEP, '      - { type: ff1, key: k-ff1, customAlphabet: "αβγδεζηθικ" }'))).toEqual([]);
  });

  it('alphabet and customAlphabet both set', () => {
    const text = edit(FPE_STEP, '      - { type: ff1, key: k-ff1, alphabet: digits, customAlphabet: "0123456789" }');
    expectOnlyError(text, '/sequences/fpe/steps/0', [/not both/], 'customAlphabet');
  });

  it('ff3-1 compiles with a deprecation warning, not an error', () => {
    let text = edit('  k-ff1: { type: ff1, version: 1 }', '  k-ff1: { type: ff3-1, version: 1 }');
    text = edit(FPE_STEP, '      - { type: ff3-1, key: k-ff1, alphabet: digits }', text);
    const { config, issues } = compileConfigText(text);
    expect(config).toBeDefined();
    expect(issues).toEqual([
      { severity: 'warning', pointer: '/sequences/fpe/steps/0', message: expect.stringMatching(/deprecated.*ff1/), line: lineOf(text, 'type: ff3-1, key') },
    ]);
    expect(config!.warnings).toEqual(issues);
  });

  it('warnings are kept next to errors; errors make the configuration invalid', () => {
    let text = edit('  k-ff1: { type: ff1, version: 1 }', '  k-ff1: { type: ff3-1, version: 1 }');
    text = edit(FPE_STEP, '      - { type: ff3-1, key: k-ff1, alphabet: digits }', text);
    text = edit('    evidences: { Role: admin }', '    evidences: {}', text);
    expect(summary(text)).toEqual([
      ['warning', '/sequences/fpe/steps/0'],
      ['error', '/rightsContexts/admin/evidences'],
    ]);
    expect(compileConfigText(text).config).toBeUndefined();
  });
});

describe('configuration errors: key references', () => {
  it('a key reference name that is not a keystore id (upper case) and no id', () => {
    let text = edit('  k-mac: { type: hmac-sha256 }', '  PanKey: { type: hmac-sha256 }');
    text = edit('      - { type: hmac-sha256, key: k-mac }', '      - { type: hmac-sha256, key: PanKey }', text);
    expectOnlyError(text, '/keys/PanKey', ['PanKey', /set id/], 'PanKey: {');
  });

  it('the same reference with an explicit id compiles, and steps resolve it to that id', () => {
    let text = edit('  k-mac: { type: hmac-sha256 }', '  PanKey: { type: hmac-sha256, id: pan.key-v2 }');
    text = edit('      - { type: hmac-sha256, key: k-mac }', '      - { type: hmac-sha256, key: PanKey }', text);
    const { config, issues } = compileConfigText(text);
    expect(issues).toEqual([]);
    expect(config!.keys.get('PanKey')).toEqual({ name: 'PanKey', id: 'pan.key-v2', type: 'hmac-sha256' });
  });
});

describe('several configuration errors at once', () => {
  it('every cross-reference error is reported, each with its pointer and line', () => {
    let text = BASE;
    text = edit('  k-ff1: { type: ff1, version: 1 }', '  k-ff1: { type: ff1 }', text);
    text = edit('      - { type: aes-siv, key: k-siv }', '      - { type: aes-siv, key: k-none }', text);
    text = edit('      tag: { protect: mac, unprotect: none }', '      tag: { protect: mac }', text);
    text = edit('[Protect, Unprotect, Mask]', '[Protect, Unprotect, Mask, Zap]', text);
    text = edit('    evidences: { Role: admin }', '    evidences: {}', text);
    text = edit('  mask: { evidences: { Action: Mask } }', '  mask: { evidences: { Action: Mask } }\n  again: { evidences: { Action: Mask } }', text);
    const issues = issuesOf(text);
    expect(issues.map((i) => [i.severity, i.pointer, i.line])).toEqual([
      ['error', '/keys/k-ff1/version', lineOf(text, 'k-ff1: {')],
      ['error', '/sequences/det/steps/0/key', lineOf(text, 'k-none')],
      ['error', '/classes/Person/properties/tag/protect', lineOf(text, 'tag: {')],
      ['error', '/rightsContexts/admin/evidences', lineOf(text, 'evidences: {}')],
      ['error', '/rightsContexts/admin/grants/0/actions/3', lineOf(text, 'Zap')],
      ['error', '/processingContexts/again/evidences', lineOf(text, 'again:')],
    ]);
    for (const issue of issues) expect(issue.message.length).toBeGreaterThan(10);
  });

  it('every error of a configuration text formats as file:line: severity: pointer: message', () => {
    let text = edit('      - { type: aes-siv, key: k-siv }', '      - { type: aes-siv, key: k-none }');
    text = edit('    evidences: { Role: admin }', '    evidences: {}', text);
    const { config, issues } = compileConfigText(text);
    expect(config).toBeUndefined();
    const lines = issues
      .filter((i) => i.severity === 'error')
      .map((i) => formatIssue('conf/test.yaml', i))
      .join('\n');
    expect(lines).toContain(`conf/test.yaml:${lineOf(text, 'k-none')}: error: /sequences/det/steps/0/key: key reference "k-none"`);
    expect(lines).toContain(`conf/test.yaml:${lineOf(text, 'evidences: {}')}: error: /rightsContexts/admin/evidences: `);
  });

  it('formatIssue prints / for the root pointer and leaves out an unknown line', () => {
    expect(formatIssue('f.yaml', { severity: 'error', pointer: '', message: 'm' })).toBe('f.yaml: error: /: m');
    expect(formatIssue('f.yaml', { severity: 'warning', pointer: '/a~1b', message: 'm', line: 3 })).toBe('f.yaml:3: warning: /a~1b: m');
  });

  it('compileConfig (no text) reports the same issues without lines', () => {
    const issues = compileConfig({ version: 1, keys: { k: { type: 'ff1' } }, sequences: {}, classes: {}, rightsContexts: {}, processingContexts: {} }).issues;
    expect(issues).toEqual([{ severity: 'error', pointer: '/keys/k/version', message: expect.any(String) }]);
  });
});
