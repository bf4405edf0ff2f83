import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ActiveVersionWatch, ConfigVersions, EngineHolder } from '../../src/control/index.ts';
import { provisionKeys } from '../../src/keystore/config-keys.ts';
import { openEngine, versionBuilder } from '../../src/app/open-engine.ts';
import { compileVeilConfigText } from '../../src/app/config-file.ts';
import { body, EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';

let dir: string;
const now = () => new Date('2026-01-02T03:04:05Z');
const env = { VEIL_MASTER_KEY: 'b'.repeat(64) };

/** One serving process on the shared data dir: its version store, keystore, holder and watch. */
async function process_(configFile: string) {
  const versions = await ConfigVersions.open(dir);
  const active = await versions.adopt(configFile, now(), compileVeilConfigText);
  const { config, engine, keystore } = await openEngine({ configFile: active.file, dataDir: dir, env, now, provision: true });
  const holder = new EngineHolder({ engine, config, version: active.number });
  const errors: [number, string][] = [];
  const watch = new ActiveVersionWatch({
    versions,
    keystore,
    holder,
    build: versionBuilder(keystore),
    intervalMs: 60_000,
    onError: (v, e) => errors.push([v, (e as { code?: string }).code ?? e.message]),
  });
  return { versions, keystore, holder, watch, errors };
}

/** The example plus a property Customer.phone on a new key `phone-siv`. */
const WITH_PHONE = EXAMPLE_CONFIG_TEXT.replace('keys:\n', 'keys:\n  phone-siv: { type: aes-siv }\n')
  .replace('sequences:\n', 'sequences:\n  phone-det:\n    steps:\n      - { type: aes-siv, key: phone-siv }\n')
  .replace('    properties:\n', '    properties:\n      phone: { protect: phone-det }\n');

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'veil-watch-'));
  await writeFile(join(dir, 'config.yaml'), EXAMPLE_CONFIG_TEXT);
});
afterEach(async () => rm(dir, { recursive: true, force: true }));

describe('ActiveVersionWatch: a version another process published runs here too', () => {
  it('swaps in the version published elsewhere (with the key created there); the engine read before stays usable', async () => {
    const a = await process_(join(dir, 'config.yaml'));
    const b = await process_(join(dir, 'config.yaml'));
    expect(b.holder.get().version).toBe(1);
    const inFlight = b.holder.current();

    // process A publishes (as the portal does: keys provisioned first, then the version)
    const compiled = compileVeilConfigText(WITH_PHONE).config!;
    await provisionKeys(compiled.engine, a.keystore);
    expect(await a.versions.publish(WITH_PHONE, { by: 'alice', source: 'portal', note: 'phone', now: now() })).toBe(2);

    expect(b.keystore.info('phone-siv')).toBeUndefined();
    await b.watch.check();
    expect(b.holder.get().version).toBe(2);
    expect(b.holder.get().config.engine.classes.get('Customer')?.has('phone')).toBe(true);
    expect(b.keystore.info('phone-siv')?.type).toBe('aes-siv');
    expect(b.holder.current()).not.toBe(inFlight);
    // the engine a call already read is untouched: it still knows only version 1's fields
    const phone = body({ roles: ['ingest'], action: 'Protect', instances: [['phone', '+41 79 000 00 00']] });
    expect(() => inFlight.transform(phone, { roles: ['ingest'] })).toThrow(expect.objectContaining({ code: 'FIELD_UNKNOWN' }));
    const out = b.holder.current().transform(phone, { roles: ['ingest'] });
    expect(JSON.stringify(out)).not.toContain('+41 79');
    expect(b.errors).toEqual([]);
    // and B's own store now numbers after A's version
    expect(b.versions.active()).toBe(2);
    expect(await b.versions.publish(EXAMPLE_CONFIG_TEXT, { by: 'bob', source: 'portal', note: 'back', now: now() })).toBe(3);
    await a.watch.check();
    expect(a.holder.get().version).toBe(3);
  });

  it('keeps the running version when the published one cannot run here, says so once, and takes it when the key appears', async () => {
    const a = await process_(join(dir, 'config.yaml'));
    const b = await process_(join(dir, 'config.yaml'));
    // published without its key (as with VEIL_ENV=production before the key was imported)
    await a.versions.publish(WITH_PHONE, { by: 'alice', source: 'portal', note: 'phone', now: now() });
    await b.watch.check();
    await b.watch.check();
    expect(b.holder.get().version).toBe(1);
    expect(b.errors).toEqual([[2, 'KEY_UNAVAILABLE']]);

    await a.keystore.create('phone-siv', 'aes-siv');
    await b.watch.check();
    expect(b.holder.get().version).toBe(2);
    expect(b.errors).toHaveLength(1);
  });

  it('picks up a key rotated by another process', async () => {
    const a = await process_(join(dir, 'config.yaml'));
    const b = await process_(join(dir, 'config.yaml'));
    await b.watch.check();
    const before = b.keystore.info('customer-siv')!.primary;
    await a.keystore.rotate('customer-siv');
    await b.watch.check();
    expect(b.keystore.info('customer-siv')!.primary).toBe(before + 1);
    expect(b.holder.get().version).toBe(1);
  });

  it('never replaces a version swapped in meanwhile with an older one', () => {
    const holder = new EngineHolder({ engine: {} as never, config: {} as never, version: 1 });
    const seen = holder.get();
    holder.swap({ engine: {} as never, config: {} as never, version: 3 });
    expect(holder.swapIf(seen, { engine: {} as never, config: {} as never, version: 2 })).toBe(false);
    expect(holder.get().version).toBe(3);
  });
});
