import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { demoHelp } from '../../src/cli/demo-command.ts';
import { mainHelp } from '../../src/cli/main.ts';
import { streamHelp } from '../../src/cli/stream-command.ts';
import { transformResponseSchema, type TransformResponse } from '../../src/engine/index.ts';
import { ERROR_CATALOG } from '../../src/errors/catalog.ts';
import { fakeCliIo, masterKeyHex, tempDir, veil, type FakeCliIo } from '../helpers/cli-io.ts';
import { EXAMPLE_CONFIG_FILE, EXAMPLE_CONFIG_TEXT, body } from '../helpers/engine-fixture.ts';

const FIELDS: [string, string][] = [
  ['email', 'philippa.cli-roundtrip@example.com'],
  ['cardNumber', '3714-4963-5398-4310'],
  ['nationalId', 'ZZ987654A'],
  ['name', 'Philippa Clitheroe'],
];

/** A temp working directory and an io whose environment holds a master key. */
async function setup(env: Record<string, string | undefined> = {}): Promise<{ cwd: string; io: FakeCliIo }> {
  const cwd = await tempDir();
  return { cwd, io: fakeCliIo(cwd, { VEIL_MASTER_KEY: masterKeyHex(), ...env }) };
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

function parseResponse(out: string): TransformResponse {
  const parsed = transformResponseSchema.safeParse(JSON.parse(out));
  if (!parsed.success) throw new Error(`not a transform response: ${out}`);
  return parsed.data;
}

interface ErrorDoc {
  error: {
    code: keyof typeof ERROR_CATALOG;
    message: string;
    retriable: boolean;
    details?: { code: string; pointer: string; request?: string; instance?: number }[];
  };
}

function parseError(out: string): ErrorDoc {
  const doc = JSON.parse(out) as ErrorDoc;
  expect(Object.keys(doc)).toEqual(['error']);
  expect(typeof doc.error.code).toBe('string');
  expect(typeof doc.error.message).toBe('string');
  expect(doc.error.retriable).toBe(ERROR_CATALOG[doc.error.code].retriable);
  return doc;
}

const BROKEN = EXAMPLE_CONFIG_TEXT.replace('      - { type: aes-siv, key: customer-siv }', '      - { type: aes-siv, key: customer-sivv }').replace(
  '  pan-ff1: { type: ff1, version: 1 }',
  '  pan-ff1: { type: ff1 }',
);

describe('veil (main): help and dispatch', () => {
  it.each([['help'], ['--help'], ['-h']])('%s prints the usage and exits 0', async (arg) => {
    const { io } = await setup();
    const run = await veil(io, [arg]);
    expect(run).toEqual({ code: 0, out: mainHelp, err: '' });
    expect(run.out).toMatch(/^Usage: veil <command>/);
    for (const command of ['demo', 'transform', 'config', 'keys']) expect(run.out).toContain(command);
  });

  it('no command prints the usage and exits 2', async () => {
    const { io } = await setup();
    expect(await veil(io, [])).toMatchObject({ code: 2, out: mainHelp });
  });

  it('an unknown command exits 2 on stderr, without echoing what was typed', async () => {
    const { io } = await setup();
    const typed = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc';
    const run = await veil(io, [typed, '--x']);
    expect(run.code).toBe(2);
    expect(run.out).toBe('');
    expect(run.err).toMatch(/unknown command/);
    expect(run.err).not.toContain(typed);
  });

  it('subcommand help exits 0; usage errors exit 2', async () => {
    const { io } = await setup();
    expect(await veil(io, ['transform', '--help'])).toMatchObject({ code: 0, out: expect.stringContaining('Usage: veil transform') });
    expect(await veil(io, ['config', '--help'])).toMatchObject({ code: 0, out: expect.stringContaining('Usage: veil config') });
    expect(await veil(io, ['config', 'help'])).toMatchObject({ code: 0 });
    expect((await veil(io, ['config'])).code).toBe(2);
    expect(await veil(io, ['config', 'frobnicate'])).toMatchObject({ code: 2, err: expect.stringContaining('unknown action') });
    expect(await veil(io, ['transform', '--bogus'])).toMatchObject({ code: 2, err: expect.stringContaining('bogus') });
    expect((await veil(io, ['config', 'validate', '--nope'])).code).toBe(2);
  });

  it('demo --help and stream request --help print their usage and exit 0, before any other check', async () => {
    const { cwd, io } = await setup();
    for (const argv of [
      ['demo', '--help'],
      ['demo', '-h'],
      ['demo', '--data-dir', 'd', '--help'],
    ]) {
      expect(await veil(io, argv)).toEqual({ code: 0, out: demoHelp, err: '' });
    }
    expect(demoHelp).toMatch(/^Usage: veil demo /);
    expect(await exists(join(cwd, 'd'))).toBe(false);
    expect(await exists(join(cwd, '.veil'))).toBe(false);
    // without --request-topic, --reply-topic and --token-file: help comes before those checks
    for (const argv of [
      ['stream', 'request', '--help'],
      ['stream', 'request', '-h'],
      ['stream', 'request', '--request-topic', 't', '--help'],
    ]) {
      expect(await veil(io, argv)).toEqual({ code: 0, out: streamHelp, err: '' });
    }
    expect(streamHelp).toContain('veil stream request --request-topic T --reply-topic R --token-file F');
    expect(await veil(io, ['stream', 'request'])).toMatchObject({
      code: 2,
      err: expect.stringContaining('needs --request-topic, --reply-topic and --token-file'),
    });
  });

  it('stream rewrap: usage errors exit 2 before anything is opened', async () => {
    const { cwd, io } = await setup();
    expect(await veil(io, ['stream', 'rewrap', '--help'])).toEqual({ code: 0, out: streamHelp, err: '' });
    for (const argv of [
      ['stream', 'rewrap'],
      ['stream', 'rewrap', '--pipeline', 'p', '--to', 't'],
      ['stream', 'rewrap', '--pipeline', 'p', '--pipeline', 'q', '--to', 't', '--role', 'fraud'],
    ])
      expect(await veil(io, argv)).toMatchObject({ code: 2, err: expect.stringContaining('needs one --pipeline, --to and --role') });
    expect(await veil(io, ['stream', 'rewrap', '--pipeline', 'p', '--to', 't', '--role', 'fraud', '--rights', 'Role'])).toMatchObject({
      code: 2,
      err: expect.stringContaining('--rights takes Name=Value'),
    });
    expect(await veil(io, ['stream', 'rewrap', '--pipeline', 'p', '--to', 't', '--role', 'fraud', '--unprotect', '=x'])).toMatchObject({
      code: 2,
      err: expect.stringContaining('--unprotect takes Name=Value'),
    });
    expect(await exists(join(cwd, '.veil'))).toBe(false);
  });

  it.each([['stream'], ['keys'], ['config'], ['db'], ['identity']])(
    '%s <unknown subcommand> --help exits 2 with the usage; help on the group or a real subcommand exits 0',
    async (group) => {
      const { io } = await setup();
      const unknown = await veil(io, [group, 'nosuch', '--help']);
      expect(unknown.code).toBe(2);
      expect(`${unknown.out}${unknown.err}`).toContain(`veil ${group}`);
      expect((await veil(io, [group, '--help'])).code).toBe(0);
      const real = { stream: 'protect', keys: 'list', config: 'validate', db: 'install', identity: 'hash-secret' }[group]!;
      expect((await veil(io, [group, real, '--help'])).code).toBe(0);
    },
  );
});

describe('veil config validate', () => {
  it('the shipped example is valid (exit 0)', async () => {
    const { io } = await setup();
    const run = await veil(io, ['config', 'validate']);
    expect(run).toEqual({ code: 0, out: `${EXAMPLE_CONFIG_FILE}: valid\n`, err: '' });
  });

  it('takes the file from $VEIL_CONFIG, relative to the working directory', async () => {
    const { cwd, io } = await setup({ VEIL_CONFIG: 'conf/veil.yaml' });
    await mkdir(join(cwd, 'conf'));
    await writeFile(join(cwd, 'conf', 'veil.yaml'), BROKEN);
    const run = await veil(io, ['config', 'validate']);
    expect(run.code).toBe(1);
    expect(run.out).toContain(`${join(cwd, 'conf', 'veil.yaml')}:`);
  });

  it('a broken configuration exits 1 and prints every problem as file:line: error: pointer: message', async () => {
    const { cwd, io } = await setup();
    await writeFile(join(cwd, 'broken.yaml'), BROKEN);
    const run = await veil(io, ['config', 'validate', '--config', 'broken.yaml']);
    expect(run.code).toBe(1);
    const file = join(cwd, 'broken.yaml');
    const lines = BROKEN.split('\n');
    const lineOf = (needle: string) => lines.findIndex((l) => l.includes(needle)) + 1;
    expect(run.out.trimEnd().split('\n')).toEqual([
      `${file}:${lineOf('pan-ff1: { type: ff1 }')}: error: /keys/pan-ff1/version: ${'ff1 output has no room for a key version: pin one with version: N (see docs/design.md, "Rotation of FPE keys")'}`,
      `${file}:${lineOf('customer-sivv')}: error: /sequences/email-deterministic/steps/0/key: key reference "customer-sivv" is not defined under keys`,
    ]);
    expect(run.err).toBe(`${file}: invalid: 2 error(s), 0 warning(s)\n`);
  });

  it('takes the file as a positional argument too, and refuses two files rather than checking the default', async () => {
    const { cwd, io } = await setup();
    await writeFile(join(cwd, 'broken.yaml'), BROKEN);
    const run = await veil(io, ['config', 'validate', 'broken.yaml']);
    expect(run.code).toBe(1);
    expect(run.err).toBe(`${join(cwd, 'broken.yaml')}: invalid: 2 error(s), 0 warning(s)\n`);
    expect((await veil(io, ['config', 'validate', 'broken.yaml', 'other.yaml'])).code).toBe(2);
    const both = await veil(io, ['config', 'validate', 'broken.yaml', '--config', 'broken.yaml']);
    expect(both.code).toBe(2);
    expect(both.err).toContain('name one configuration file');
  });

  it('a configuration with warnings only is valid (exit 0) and prints the warnings', async () => {
    const { cwd, io } = await setup();
    const text = EXAMPLE_CONFIG_TEXT.replace(
      '  pan-ff1: { type: ff1, version: 1 }',
      '  pan-ff1: { type: ff1, version: 1 }\n  legacy-ff3: { type: ff3-1, version: 1 }',
    ).replace('  name-randomized:\n', '  legacy:\n    steps:\n      - { type: ff3-1, key: legacy-ff3 }\n  name-randomized:\n');
    await writeFile(join(cwd, 'warn.yaml'), text);
    const run = await veil(io, ['config', 'validate', '--config', join(cwd, 'warn.yaml')]);
    expect(run.code).toBe(0);
    expect(run.out).toMatch(/warn\.yaml:\d+: warning: \/sequences\/legacy\/steps\/0: ff3-1 is deprecated/);
    expect(run.out).toContain('valid with 1 warning(s)');
  });

  it('a missing file is invalid (exit 1), not a crash', async () => {
    const { cwd, io } = await setup();
    const run = await veil(io, ['config', 'validate', '--config', 'nowhere.yaml']);
    expect(run.code).toBe(1);
    expect(run.out).toContain(`${join(cwd, 'nowhere.yaml')}: error: /: cannot read the file (ENOENT)`);
  });

  it('a YAML alias bomb is an invalid configuration (exit 1), not a crash', async () => {
    const { cwd, io } = await setup();
    const rows = ['a: &a [x,x,x,x,x,x,x,x,x,x]'];
    for (const [name, prev] of [
      ['b', 'a'],
      ['c', 'b'],
      ['d', 'c'],
      ['e', 'd'],
    ])
      rows.push(`${name}: &${name} [${Array(10).fill(`*${prev}`).join(',')}]`);
    await writeFile(join(cwd, 'bomb.yaml'), `version: 1\n${rows.join('\n')}\n`);
    let run: Awaited<ReturnType<typeof veil>> | undefined;
    let thrown: unknown;
    try {
      run = await veil(io, ['config', 'validate', '--config', 'bomb.yaml']);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeUndefined();
    expect(run!.code).toBe(1);
    expect(run!.out).toContain('bomb.yaml');
  });

  it('a YAML syntax error is printed with its line', async () => {
    const { cwd, io } = await setup();
    await writeFile(join(cwd, 'syntax.yaml'), EXAMPLE_CONFIG_TEXT.replace('  pseudonym: { type: hmac-sha256 }', '  pseudonym: { type: hmac-sha256'));
    const run = await veil(io, ['config', 'validate', '--config', 'syntax.yaml']);
    expect(run.code).toBe(1);
    expect(run.out).toMatch(new RegExp(`^${join(cwd, 'syntax.yaml').replaceAll('.', '\\.')}:\\d+: error: `));
  });
});

describe('veil config provision and veil transform', () => {
  it('provision creates the referenced keys once; transform protects then unprotects the example fields', async () => {
    const { cwd, io } = await setup();
    const dataDir = join(cwd, '.veil');

    const provision = await veil(io, ['config', 'provision']);
    expect(provision).toEqual({ code: 0, out: `created customer-siv, customer-gcm, pan-ff1, pseudonym in ${join(dataDir, 'keystore.json')}\n`, err: '' });
    expect(await exists(join(dataDir, 'master.key'))).toBe(false); // the master key came from the environment
    const again = await veil(io, ['config', 'provision']);
    expect(again).toMatchObject({ code: 0, out: `every key of ${EXAMPLE_CONFIG_FILE} is in ${join(dataDir, 'keystore.json')}\n` });

    const keys = await veil(io, ['keys', 'list', '--json']);
    expect(JSON.parse(keys.out).keys.map((k: { id: string; type: string; primary: number }) => [k.id, k.type, k.primary])).toEqual([
      ['customer-gcm', 'aes-gcm', 1],
      ['customer-siv', 'aes-siv', 1],
      ['pan-ff1', 'ff1', 1],
      ['pseudonym', 'hmac-sha256', 1],
    ]);

    const protectBody = body({ roles: ['fraud'], action: 'Protect', instances: FIELDS });
    const protect = await veil(io, ['transform', '--roles', 'fraud', '--request', '-'], JSON.stringify(protectBody));
    expect(protect.err).toBe('');
    expect(protect.code).toBe(0);
    const protectedRes = parseResponse(protect.out);
    expect(protectedRes.responses.map((r) => r.request)).toEqual([protectBody.requests[0]!.guid]);
    const protectedValues = protectedRes.responses[0]!.instances.map((i) => i.value);
    protectedValues.forEach((v, i) => expect(v).not.toBe(FIELDS[i]![1]));
    for (const [, clear] of FIELDS) expect(protect.out).not.toContain(clear);

    const unprotectBody = body({ roles: ['fraud'], action: 'Unprotect', instances: FIELDS.map(([p], i) => [p, protectedValues[i]!] as [string, string]) });
    const unprotect = await veil(io, ['transform', '--roles', 'support, fraud', '--request', '-'], JSON.stringify(unprotectBody));
    expect(unprotect.code).toBe(0);
    const clear = parseResponse(unprotect.out).responses[0]!.instances;
    expect(clear.map((i) => [i.propertyName, i.value])).toEqual(FIELDS);
  });

  it('--request FILE reads the body from a file (absolute path)', async () => {
    const { cwd, io } = await setup();
    await veil(io, ['config', 'provision']);
    const file = join(cwd, 'protect.json');
    await writeFile(file, JSON.stringify(body({ roles: ['fraud'], action: 'Protect', instances: FIELDS })));
    const run = await veil(io, ['transform', '--roles', 'fraud', '--request', file]);
    expect(run.code).toBe(0);
    expect(parseResponse(run.out).responses[0]!.instances).toHaveLength(FIELDS.length);
  });

  it('--request FILE with a relative path is resolved against the working directory, like --config and --data-dir', async () => {
    const { cwd, io } = await setup();
    await veil(io, ['config', 'provision']);
    await writeFile(join(cwd, 'protect.json'), JSON.stringify(body({ roles: ['fraud'], action: 'Protect', instances: FIELDS })));
    const run = await veil(io, ['transform', '--roles', 'fraud', '--request', 'protect.json']);
    expect(run.out).not.toContain('cannot be read');
    expect(run.code).toBe(0);
  });

  it('--request defaults to stdin; --data-dir and $VEIL_DATA_DIR choose the keystore', async () => {
    const { cwd, io } = await setup({ VEIL_DATA_DIR: 'state' });
    expect((await veil(io, ['config', 'provision'])).out).toContain(join(cwd, 'state', 'keystore.json'));
    const req = body({ roles: ['ingest'], action: 'Pseudonymize', instances: [['name', 'Stdin Person']] });
    const run = await veil(io, ['transform', '--roles', 'ingest'], JSON.stringify(req));
    expect(run.code).toBe(0);
    expect(parseResponse(run.out).responses[0]!.instances[0]!.value).toMatch(/^[A-Za-z0-9_-]+$/);
    // another data dir has no keys
    const elsewhere = await veil(io, ['transform', '--roles', 'ingest', '--data-dir', join(cwd, 'other')], JSON.stringify(req));
    expect(elsewhere.code).toBe(1);
    expect(parseError(elsewhere.out).error.code).toBe('KEY_UNAVAILABLE');
  });

  it('a transform error exits 1 with {error:{code,message,retriable,details}} on stdout and none of the values', async () => {
    const { io } = await setup();
    expect((await veil(io, ['config', 'provision'])).code).toBe(0);
    const secretCard = '6011-0009-9013-9424';
    const secretEmail = 'never.printed.7731@example.com';
    const req = body(
      {
        roles: ['support'],
        action: 'Protect',
        instances: [
          ['email', secretEmail],
          ['cardNumber', secretCard],
        ],
      },
      { roles: ['support'], action: 'Mask', instances: [['nationalId', 'QX55501234']] },
    );
    const run = await veil(io, ['transform', '--roles', 'support'], JSON.stringify(req));
    expect(run.code).toBe(1);
    const doc = parseError(run.out);
    expect(doc.error.code).toBe('ACTION_NOT_GRANTED');
    expect(doc.error.retriable).toBe(false);
    expect(doc.error.details!.map((d) => [d.code, d.request, d.instance, d.pointer])).toEqual([
      ['ACTION_NOT_GRANTED', req.requests[0]!.guid, 1, '/requests/0/instances/1'],
      ['ACTION_NOT_GRANTED', req.requests[1]!.guid, 0, '/requests/1/instances/0'],
    ]);
    for (const value of [secretCard, secretCard.replaceAll('-', ''), secretEmail, 'QX55501234']) {
      expect(run.out).not.toContain(value);
      expect(run.err).not.toContain(value);
    }
  });

  it('a value error exits 1 and names the instance, not the value', async () => {
    const { io } = await setup();
    await veil(io, ['config', 'provision']);
    const req = body({
      roles: ['fraud'],
      action: 'Unprotect',
      instances: [
        ['email', 'Zm9yZ2VkLXZhbHVlLTk5'],
        ['cardNumber', '9999-0000'],
      ],
    });
    const run = await veil(io, ['transform', '--roles', 'fraud'], JSON.stringify(req));
    expect(run.code).toBe(1);
    const doc = parseError(run.out);
    expect(doc.error.code).toBe('PROTECTED_VALUE_INVALID');
    expect(doc.error.details!.map((d) => [d.code, d.pointer])).toEqual([
      ['PROTECTED_VALUE_INVALID', '/requests/0/instances/0/value'],
      ['VALUE_TOO_SHORT', '/requests/0/instances/1/value'],
    ]);
    expect(run.out).not.toContain('Zm9yZ2VkLXZhbHVlLTk5');
    expect(run.out).not.toContain('9999-0000');
  });

  it('without --roles, a Role evidence is not held → ROLE_NOT_HELD', async () => {
    const { io } = await setup();
    await veil(io, ['config', 'provision']);
    const run = await veil(io, ['transform'], JSON.stringify(body({ roles: ['fraud'], action: 'Protect', instances: [['email', 'a@b.c']] })));
    expect(run.code).toBe(1);
    expect(parseError(run.out).error.code).toBe('ROLE_NOT_HELD');
  });

  it('a request that is not JSON → REQUEST_MALFORMED without echoing the text', async () => {
    const { io } = await setup();
    await veil(io, ['config', 'provision']);
    const text = '{"rightsContexts": [ "4111111111111111" ';
    const run = await veil(io, ['transform', '--roles', 'fraud'], text);
    expect(run.code).toBe(1);
    expect(parseError(run.out).error).toMatchObject({ code: 'REQUEST_MALFORMED', details: [{ code: 'REQUEST_MALFORMED', pointer: '' }] });
    expect(run.out).not.toContain('4111111111111111');
  });

  it('a request body of the wrong shape → REQUEST_MALFORMED with pointers', async () => {
    const { io } = await setup();
    await veil(io, ['config', 'provision']);
    const run = await veil(io, ['transform', '--roles', 'fraud'], JSON.stringify({ rightsContexts: [], processingContexts: [] }));
    expect(run.code).toBe(1);
    expect(parseError(run.out).error.details).toEqual([expect.objectContaining({ pointer: '/requests' })]);
  });

  it('a request file that does not exist → exit 1, REQUEST_MALFORMED', async () => {
    const { io } = await setup();
    await veil(io, ['config', 'provision']);
    const run = await veil(io, ['transform', '--roles', 'fraud', '--request', 'missing.json']);
    expect(run.code).toBe(1);
    expect(parseError(run.out).error.code).toBe('REQUEST_MALFORMED');
  });

  it('transform without provisioned keys → exit 1, KEY_UNAVAILABLE (retriable), naming the missing keys', async () => {
    const { io } = await setup();
    const run = await veil(
      io,
      ['transform', '--roles', 'fraud'],
      JSON.stringify(body({ roles: ['fraud'], action: 'Protect', instances: [['email', 'nokeys@example.com']] })),
    );
    expect(run.code).toBe(1);
    const doc = parseError(run.out);
    expect(doc.error.code).toBe('KEY_UNAVAILABLE');
    expect(doc.error.retriable).toBe(true);
    for (const id of ['customer-siv', 'customer-gcm', 'pan-ff1', 'pseudonym']) expect(doc.error.message).toContain(id);
    expect(doc.error.message).toContain('veil config provision');
    expect(run.out).not.toContain('nokeys@example.com');
  });

  it('transform with another master key than the keystore was written with → exit 1, KEYSTORE_INVALID', async () => {
    const { io } = await setup();
    await veil(io, ['config', 'provision']);
    io.env.VEIL_MASTER_KEY = masterKeyHex();
    const run = await veil(io, ['transform', '--roles', 'fraud'], JSON.stringify(body({ roles: ['fraud'], action: 'Protect', instances: [] })));
    expect(run.code).toBe(1);
    expect(parseError(run.out).error.code).toBe('KEYSTORE_INVALID');
  });

  it('transform with an invalid configuration → exit 1, CONFIG_INVALID listing the problems', async () => {
    const { cwd, io } = await setup();
    await writeFile(join(cwd, 'broken.yaml'), BROKEN);
    const run = await veil(
      io,
      ['transform', '--roles', 'fraud', '--config', 'broken.yaml'],
      JSON.stringify(body({ roles: ['fraud'], action: 'Protect', instances: [] })),
    );
    expect(run.code).toBe(1);
    const doc = parseError(run.out);
    expect(doc.error.code).toBe('CONFIG_INVALID');
    expect(doc.error.message).toContain('/sequences/email-deterministic/steps/0/key');
  });

  it('config provision of an invalid configuration exits 1 and creates no keys', async () => {
    const { cwd, io } = await setup();
    await writeFile(join(cwd, 'broken.yaml'), BROKEN);
    const run = await veil(io, ['config', 'provision', '--config', 'broken.yaml']);
    expect(run.code).toBe(1);
    expect(run.err).toContain('CONFIG_INVALID');
    expect(await exists(join(cwd, '.veil', 'keystore.json'))).toBe(false);
  });

  it('config provision refuses a keystore key of the wrong type (exit 1, KEY_UNAVAILABLE)', async () => {
    const { io } = await setup();
    expect((await veil(io, ['keys', 'create', '--id', 'pseudonym', '--type', 'aes-gcm'])).code).toBe(0);
    const run = await veil(io, ['config', 'provision']);
    expect(run.code).toBe(1);
    expect(run.err).toContain('KEY_UNAVAILABLE');
    expect(run.err).toContain('pseudonym');
  });
});

describe('veil demo', () => {
  it('provisions keys in --data-dir, protects and unprotects the sample, exits 0; a second run reuses the keys', async () => {
    const { cwd, io } = await setup();
    const dataDir = join(cwd, 'demo-data');
    const run = await veil(io, ['demo', '--data-dir', dataDir]);
    expect(run.code).toBe(0);
    expect(run.err).toContain(`created keys customer-siv, customer-gcm, pan-ff1, pseudonym in ${join(dataDir, 'keystore.json')}`);
    expect(run.out).toContain(`configuration ${EXAMPLE_CONFIG_FILE}, keystore ${join(dataDir, 'keystore.json')}`);
    expect(run.out).toContain('Protect then Unprotect as role "fraud"');
    for (const sample of ['alice@example.com', '4111-1111-1111-1111', 'QQ123456C', 'Alice Émilie Dupont']) {
      expect(run.out).toContain(`← ${sample}`);
    }
    const request = run.out.slice(run.out.indexOf('{'), run.out.indexOf('\n}\n') + 2);
    expect(JSON.parse(request)).toMatchObject({ requests: [{ instances: [{ className: 'Customer', propertyName: 'email' }, {}, {}, {}] }] });
    expect(await exists(join(dataDir, 'keystore.json'))).toBe(true);
    expect(await exists(join(cwd, '.veil'))).toBe(false);

    const second = await veil(io, ['demo', '--data-dir', dataDir]);
    expect(second.code).toBe(0);
    expect(second.err).not.toContain('created keys');
  });

  it('without VEIL_MASTER_KEY the demo creates a development master key file and says so', async () => {
    const cwd = await tempDir();
    const io = fakeCliIo(cwd, {});
    const run = await veil(io, ['demo', '--data-dir', 'd']);
    expect(run.code).toBe(0);
    expect(run.err).toContain(`created a development master key at ${join(cwd, 'd', 'master.key')}`);
    expect((await readFile(join(cwd, 'd', 'master.key'))).length).toBeGreaterThan(0);
  });

  it('demo usage errors exit 2 like the other commands, instead of throwing', async () => {
    const { io } = await setup();
    for (const argv of [
      ['demo', '--bogus'],
      ['demo', 'extra'],
    ]) {
      let run: Awaited<ReturnType<typeof veil>> | undefined;
      let thrown: unknown;
      try {
        run = await veil(io, argv);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeUndefined();
      expect(run!.code).toBe(2);
    }
  });

  it('the demo exits 1 with an error document when the configuration is invalid', async () => {
    const { cwd, io } = await setup();
    await writeFile(join(cwd, 'broken.yaml'), BROKEN);
    const run = await veil(io, ['demo', '--config', 'broken.yaml', '--data-dir', join(cwd, 'd')]);
    expect(run.code).toBe(1);
    expect(parseError(run.err).error.code).toBe('CONFIG_INVALID');
  });
});
