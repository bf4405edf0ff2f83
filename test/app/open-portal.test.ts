import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { compileVeilConfigText } from '../../src/app/config-file.ts';
import { portalConfigPort } from '../../src/app/open-portal.ts';
import { SecretKey } from '../../src/engine/index.ts';
import { LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { FIXED_NOW, tempDir } from '../helpers/cli-io.ts';
import { EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';

const EXAMPLE_KEYS = ['customer-gcm', 'customer-siv', 'pan-ff1', 'pseudonym'];

async function emptyKeystore(): Promise<LocalKeystore> {
  return LocalKeystore.open({ dataDir: await tempDir('veil-portal-port-'), masterKey: SecretKey.fromBytes(randomBytes(32)), now: () => FIXED_NOW });
}

describe("the portal's port onto the wiring (portalConfigPort)", () => {
  const engine = compileVeilConfigText(EXAMPLE_CONFIG_TEXT).config!.engine;

  it("compiles with the whole configuration's compiler: sections the engine does not know are checked too", () => {
    const port = portalConfigPort({} as LocalKeystore, false);
    expect(port.compile).toBe(compileVeilConfigText);
    const bad = port.compile(`${EXAMPLE_CONFIG_TEXT}\nservice:\n  nonsense: 1\n`);
    expect(bad.config).toBeUndefined();
    expect(bad.issues.some((i) => i.severity === 'error' && i.pointer.startsWith('/service'))).toBe(true);
    expect(port.sandboxWorker.pathname).toMatch(/\/src\/app\/portal-sandbox-thread\.ts$/);
  });

  it('in development a publish creates the keys the keystore lacks; otherwise it is refused with KEY_UNAVAILABLE', async () => {
    const production = await emptyKeystore();
    await expect(portalConfigPort(production, false).prepareKeys(engine)).rejects.toMatchObject({ code: 'KEY_UNAVAILABLE' });
    expect(production.list()).toEqual([]);
    const development = await emptyKeystore();
    await portalConfigPort(development, true).prepareKeys(engine);
    expect(
      development
        .list()
        .map((k) => k.id)
        .sort(),
    ).toEqual(EXAMPLE_KEYS);
    // once there, both policies accept it
    await expect(portalConfigPort(development, false).prepareKeys(engine)).resolves.toBeUndefined();
  });
});
