import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileVeilConfigText } from '../../src/app/config-file.ts';
import { controlStoreOver, dataDirMirror, ensureControlKey, signWrite, versionIsAuthentic, type AppendLog } from '../../src/app/control-store.ts';
import { ConfigVersions } from '../../src/control/config-versions.ts';
import { LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { ControlState, type Accepted, type ControlWrite, type History } from '../../src/store/control-log.ts';
import { EXAMPLE_CONFIG_FILE, EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';
import { FIXED_NOW, randomMasterKey, tempDir } from '../keystore/helpers.ts';

/**
 * An in-memory log shared by several "processes" (each with its own data dir and mirror): appends
 * are applied in call order; `raceNext` makes the next append of a process lose to a write of
 * another one slipped in first, as on a real topic.
 */
class SharedLog {
  readonly state = new ControlState();
  private readonly mirrors: ((e: Accepted) => Promise<void>)[] = [];
  /** runs once, inside the next append of `history`, before that append reaches the log */
  raceNext?: { history: History; first: () => Promise<unknown> };

  async join(dataDir: string): Promise<AppendLog> {
    const mirror = await dataDirMirror(dataDir);
    for (const e of [...this.state.configs, ...(this.state.keyset ? [this.state.keyset] : [])]) await mirror(e);
    this.mirrors.push(mirror);
    return {
      head: (h) => this.state.head(h),
      append: async (history, basedOn, body, meta, sign) => {
        if (this.raceNext?.history === history) {
          const { first } = this.raceNext;
          this.raceNext = undefined;
          await first();
        }
        const w: ControlWrite = { v: 1, history, basedOn, writer: `w${Math.random()}`, at: FIXED_NOW.toISOString(), body, ...(meta ? { meta } : {}) };
        const auth = sign?.(w);
        return this.apply(auth ? { ...w, auth } : w);
      },
      close: async () => {},
    };
  }

  private async apply(w: ControlWrite): Promise<Accepted | undefined> {
    const entry = this.state.apply(w);
    if (entry) for (const m of this.mirrors) await m(entry);
    return entry;
  }
}

const check = compileVeilConfigText;

describe('the control store over a shared log (in memory)', () => {
  it('a publish that loses its race is sent again on the newer head; every data dir ends with the same versions', async () => {
    const log = new SharedLog();
    const [dirA, dirB] = [await tempDir(), await tempDir()];
    // publishes are signed with the key set's control key: each process has the key set open
    const master = randomMasterKey();
    const keysA = await LocalKeystore.open({ dataDir: dirA, masterKey: master, now: () => FIXED_NOW });
    await ensureControlKey(keysA);
    const a = await ConfigVersions.open(dirA);
    controlStoreOver(await log.join(dirA), 'test').attach({ versions: a, keystore: keysA });
    const b = await ConfigVersions.open(dirB);
    controlStoreOver(await log.join(dirB), 'test').attach({ versions: b, keystore: keysA });
    expect((await a.adopt(EXAMPLE_CONFIG_FILE, FIXED_NOW, check)).number).toBe(1);
    // b starts with the same file: already adopted, not published twice
    expect(await b.adopt(EXAMPLE_CONFIG_FILE, FIXED_NOW, check)).toMatchObject({ number: 1, adopted: false });
    log.raceNext = { history: 'config', first: () => b.publish(`${EXAMPLE_CONFIG_TEXT}\n# from another portal\n`, { by: 'other', source: 'portal', note: 'other', now: FIXED_NOW }) };
    const n = await a.publish(`${EXAMPLE_CONFIG_TEXT}\n# from a\n`, { by: 'admin', source: 'portal', note: 'a', now: FIXED_NOW });
    expect(n).toBe(3);
    for (const v of [a, b]) {
      await v.reload();
      expect(v.active()).toBe(3);
      expect(v.versions().map((x) => x.note)).toEqual([expect.stringContaining('adopted from'), 'other', 'a']);
    }
    expect(await readFile(join(dirB, 'config-versions/0002.yaml'), 'utf8')).toContain('# from another portal');
  });

  it('a key change that loses its race is applied again to the key set that won: nothing is lost, no fork', async () => {
    const log = new SharedLog();
    const master = randomMasterKey();
    const [dirA, dirB] = [await tempDir(), await tempDir()];
    // as a process does: the data dir mirrors the log first, then the keystore opens on it
    const storeA = controlStoreOver(await log.join(dirA), 'test');
    const a = await LocalKeystore.open({ dataDir: dirA, masterKey: master, now: () => FIXED_NOW });
    storeA.attach({ keystore: a });
    await a.create('k1', 'aes-gcm');
    const storeB = controlStoreOver(await log.join(dirB), 'test');
    const b = await LocalKeystore.open({ dataDir: dirB, masterKey: master, now: () => FIXED_NOW });
    storeB.attach({ keystore: b });
    expect(b.info('k1')?.primary).toBe(1);
    // b rotates k1 on key set 1 while a's creation of k2 lands first: b's commit loses, and b
    // applies its rotation again to the key set that holds k2
    log.raceNext = { history: 'keyset', first: () => a.create('k2', 'aes-siv') };
    const rotated = await b.rotate('k1');
    expect(rotated.primary).toBe(2);
    expect(log.state.head('keyset')).toBe(3);
    await a.reload();
    expect([a.info('k1')?.primary, a.info('k2')?.type]).toEqual([2, 'aes-siv']);
    expect([b.info('k1')?.primary, b.info('k2')?.type]).toEqual([2, 'aes-siv']);
    const last = Buffer.from(log.state.keyset!.write.body, 'base64');
    expect(last.equals(await readFile(join(dirA, 'keystore.json')))).toBe(true);
    expect(last.equals(await readFile(join(dirB, 'keystore.json')))).toBe(true);
    // a create of a key another process created meanwhile is KEY_EXISTS, not a second key
    await expect(a.create('k1', 'aes-gcm')).rejects.toMatchObject({ code: 'KEY_EXISTS' });
  });
});

describe('configuration versions in a shared store are authenticated by the key set', () => {
  const write = (over: Partial<ControlWrite> = {}): ControlWrite => ({ v: 1, history: 'config', basedOn: 0, writer: 'w1', at: FIXED_NOW.toISOString(), body: EXAMPLE_CONFIG_TEXT, meta: { by: 'admin', source: 'portal', note: 'n' }, ...over });
  const setup = async () => {
    const dataDir = await tempDir();
    const keystore = await LocalKeystore.open({ dataDir, masterKey: randomMasterKey(), now: () => FIXED_NOW });
    await ensureControlKey(keystore);
    const mirror = await dataDirMirror(dataDir);
    const versions = await ConfigVersions.open(dataDir);
    const put = async (w: ControlWrite, number = w.basedOn + 1) => {
      await mirror({ history: 'config', number, write: w });
      await versions.reload();
    };
    return { dataDir, keystore, versions, put };
  };

  it('a version signed with the control key verifies; the key is hmac-sha256 and created once', async () => {
    const { keystore, versions, put } = await setup();
    expect(keystore.info('veil-control')).toMatchObject({ type: 'hmac-sha256', primary: 1 });
    await ensureControlKey(keystore);
    expect(keystore.info('veil-control')!.versions).toHaveLength(1);
    const w = write();
    await put({ ...w, auth: signWrite(keystore, w) });
    expect(await versionIsAuthentic(versions, 1, keystore)).toBe(true);
  });

  it.each([
    ['no MAC at all (a record written by anyone who can reach the topic)', (w: ControlWrite) => w],
    ['another text under the MAC of the signed one', (w: ControlWrite, k: LocalKeystore) => ({ ...w, auth: signWrite(k, w), body: `${w.body}\n# changed` })],
    ['another publisher or note', (w: ControlWrite, k: LocalKeystore) => ({ ...w, auth: signWrite(k, w), meta: { by: 'mallory', source: 'portal' as const, note: 'n' } })],
    ['a signed version replayed on a newer head', (w: ControlWrite, k: LocalKeystore) => ({ ...w, auth: signWrite(k, w), basedOn: 3 })],
    ['a MAC one bit off', (w: ControlWrite, k: LocalKeystore) => {
      const auth = signWrite(k, w);
      const mac = Buffer.from(auth.mac, 'base64url');
      mac[0]! ^= 1;
      return { ...w, auth: { ...auth, mac: mac.toString('base64url') } };
    }],
    ['a MAC naming a key version the key set lacks', (w: ControlWrite, k: LocalKeystore) => ({ ...w, auth: { ...signWrite(k, w), key: 9 } })],
  ])('does not verify: %s', async (_, forge) => {
    const { keystore, versions, put } = await setup();
    const forged = forge(write(), keystore);
    await put(forged, 1);
    expect(await versionIsAuthentic(versions, 1, keystore)).toBe(false);
  });

  it('a version signed under another key set does not verify', async () => {
    const other = await setup();
    const { keystore, versions, put } = await setup();
    const w = write();
    await put({ ...w, auth: signWrite(other.keystore, w) });
    expect(await versionIsAuthentic(versions, 1, keystore)).toBe(false);
  });

  it('publishes through the store are signed with the attached keystore; without one nothing is published', async () => {
    const log = new SharedLog();
    const { dataDir, keystore } = await setup();
    const store = controlStoreOver(await log.join(dataDir), 'memory');
    const versions = await ConfigVersions.open(dataDir);
    store.attach({ versions });
    await expect(versions.publish(EXAMPLE_CONFIG_TEXT, { by: 'a', source: 'cli', note: '', now: FIXED_NOW })).rejects.toMatchObject({ code: 'KEY_UNAVAILABLE' });
    store.attach({ keystore });
    const number = await versions.publish(EXAMPLE_CONFIG_TEXT, { by: 'a', source: 'cli', note: '', now: FIXED_NOW });
    await versions.reload();
    expect(await versionIsAuthentic(versions, number, keystore)).toBe(true);
  });
});
