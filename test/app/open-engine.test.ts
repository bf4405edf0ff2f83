import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openEngine, type OpenEngineOptions } from '../../src/app/open-engine.ts';
import { EXAMPLE_CONFIG } from '../../src/env/index.ts';
import { VeilError } from '../../src/engine/index.ts';
import { FIXED_NOW, masterKeyHex, tempDir } from '../helpers/cli-io.ts';
import { body, EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';

const EXAMPLE_KEYS = 'customer-siv, customer-gcm, pan-ff1, pseudonym';

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** openEngine on the example configuration in a fresh data directory; notices collected. */
async function open(dataDir: string, options: Partial<OpenEngineOptions> = {}) {
  const notices: string[] = [];
  const opened = await openEngine({
    configFile: EXAMPLE_CONFIG,
    dataDir,
    env: {},
    now: () => FIXED_NOW,
    provision: false,
    notice: (l) => notices.push(l),
    ...options,
  });
  return { ...opened, notices };
}

async function refusal(run: Promise<unknown>): Promise<VeilError> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(VeilError);
  return error as VeilError;
}

describe('openEngine: config → master key → keystore → provision → engine', () => {
  it('in development creates the missing keys once and says so; the engine transforms with them', async () => {
    const dataDir = await tempDir('veil-app-');
    const env = { VEIL_MASTER_KEY: masterKeyHex() };
    const first = await open(dataDir, { env, provision: true });
    expect(first.notices).toEqual([`created keys ${EXAMPLE_KEYS} in ${join(dataDir, 'keystore.json')}`]);
    expect(
      first.keystore
        .list()
        .map((k) => k.id)
        .sort(),
    ).toEqual(EXAMPLE_KEYS.split(', ').sort());
    const identity = { roles: ['fraud'] };
    const protectedValue = first.engine.transform(body({ roles: ['fraud'], action: 'Protect', instances: [['email', 'app@example.com']] }), identity)
      .responses[0]!.instances[0]!.value;

    const second = await open(dataDir, { env, provision: true });
    expect(second.notices).toEqual([]);
    const back = second.engine.transform(body({ roles: ['fraud'], action: 'Unprotect', instances: [['email', protectedValue]] }), identity);
    expect(back.responses[0]!.instances[0]!.value).toBe('app@example.com');
  });

  it('returns the whole configuration, each section for its layer, and its warnings', async () => {
    const dataDir = await tempDir('veil-app-');
    const { config, warnings } = await open(dataDir, { env: { VEIL_MASTER_KEY: masterKeyHex() }, provision: true });
    expect([...config.engine.classes.keys()]).toEqual(['Customer']);
    expect(config.identity.signingKey).toBe('veil-token-signing');
    expect(config.service.limits.bodyBytes).toBe(4 * 1024 * 1024);
    expect(config.pipelines).toEqual({});
    expect(config.responders).toEqual({});
    expect(config.version).toMatch(/^[0-9a-f]{12}$/);
    expect(warnings).toEqual([]);
  });

  it('without provisioning, refuses a keystore that lacks the referenced keys (KEY_UNAVAILABLE, naming them)', async () => {
    const dataDir = await tempDir('veil-app-');
    const error = await refusal(open(dataDir, { env: { VEIL_MASTER_KEY: masterKeyHex() } }));
    expect(error.code).toBe('KEY_UNAVAILABLE');
    for (const id of EXAMPLE_KEYS.split(', ')) expect(error.message).toContain(id);
  });

  it('outside production, without VEIL_MASTER_KEY, uses a development master key file and says where', async () => {
    const dataDir = await tempDir('veil-app-');
    const { notices } = await open(dataDir, { provision: true });
    expect(notices[0]).toBe(`created a development master key at ${join(dataDir, 'master.key')} (set VEIL_MASTER_KEY in production)`);
    expect(await exists(join(dataDir, 'master.key'))).toBe(true);
  });

  it('in production refuses to start without VEIL_MASTER_KEY, before touching the data directory', async () => {
    const dataDir = await tempDir('veil-app-');
    // a development key file left behind is not used either
    const dev = await open(dataDir, { provision: true });
    expect(dev.notices.some((n) => n.startsWith('created keys'))).toBe(true);
    const error = await refusal(open(dataDir, { env: { VEIL_ENV: 'production' } }));
    expect(error.code).toBe('KEYSTORE_INVALID');
    expect(error.message).toContain('VEIL_MASTER_KEY');

    const fresh = await tempDir('veil-app-');
    await refusal(open(fresh, { env: { VEIL_ENV: 'production' }, provision: true }));
    expect(await exists(join(fresh, 'master.key'))).toBe(false);
    expect(await exists(join(fresh, 'keystore.json'))).toBe(false);
  });

  it('in production opens with VEIL_MASTER_KEY and keys provisioned beforehand', async () => {
    const dataDir = await tempDir('veil-app-');
    const env = { VEIL_MASTER_KEY: masterKeyHex() };
    await open(dataDir, { env, provision: true });
    const { engine, notices } = await open(dataDir, { env: { ...env, VEIL_ENV: 'production' } });
    expect(notices).toEqual([]);
    expect(
      engine.transform(body({ roles: ['ingest'], action: 'Protect', instances: [['email', 'p@example.com']] }), { roles: ['ingest'] }).responses,
    ).toHaveLength(1);
  });

  it('an invalid configuration is CONFIG_INVALID listing every problem with file and line, before any key is touched', async () => {
    const dataDir = await tempDir('veil-app-');
    const configFile = join(dataDir, 'broken.yaml');
    await writeFile(
      configFile,
      `${EXAMPLE_CONFIG_TEXT.replace('  pan-ff1: { type: ff1, version: 1 }', '  pan-ff1: { type: ff1 }')}
pipelines:
  p:
    source: { topics: [raw] }
    sink: { topic: raw }
    deadLetterTopic: dlq
    format: json
    fields: [ { path: email, field: Customer.mail } ]
    roles: [ingest]
    rightsEvidences: { Role: ingest }
    processingEvidences: { Action: Protect }
`,
    );
    const error = await refusal(open(dataDir, { configFile, env: { VEIL_MASTER_KEY: masterKeyHex() }, provision: true }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message.split('\n').slice(1)).toEqual([
      expect.stringMatching(new RegExp(`^${configFile}:\\d+: error: /keys/pan-ff1/version: ff1 output has no room`)),
      expect.stringMatching(new RegExp(`^${configFile}:\\d+: error: /pipelines/p/fields/0/field: Customer.mail is not a configured class.property$`)),
      expect.stringMatching(new RegExp(`^${configFile}:\\d+: error: /pipelines/p/sink/topic: the clean topic is one of the source topics$`)),
    ]);
    expect(await exists(join(dataDir, 'keystore.json'))).toBe(false);
  });
});
