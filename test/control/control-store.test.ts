import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileVeilConfigText } from '../../src/app/config-file.ts';
import {
  type Accepted,
  type AppendLog,
  ConfigVersions,
  ControlState,
  controlStoreOver,
  type ControlWrite,
  dataDirMirror,
  ensureControlKey,
  type History,
  signWrite,
  versionIsAuthentic,
  VersionMirror,
} from '../../src/control/index.ts';
import { LocalKeystore } from '../../src/keystore/local-keystore.ts';
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
    log.raceNext = {
      history: 'config',
      first: () => b.publish(`${EXAMPLE_CONFIG_TEXT}\n# from another portal\n`, { by: 'other', source: 'portal', note: 'other', now: FIXED_NOW }),
    };
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
  const write = (over: Partial<ControlWrite> = {}): ControlWrite => ({
    v: 1,
    history: 'config',
    basedOn: 0,
    writer: 'w1',
    at: FIXED_NOW.toISOString(),
    body: EXAMPLE_CONFIG_TEXT,
    meta: { by: 'admin', source: 'portal', note: 'n' },
    ...over,
  });
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
    [
      'another publisher or note',
      (w: ControlWrite, k: LocalKeystore) => ({ ...w, auth: signWrite(k, w), meta: { by: 'mallory', source: 'portal' as const, note: 'n' } }),
    ],
    ['a signed version replayed on a newer head', (w: ControlWrite, k: LocalKeystore) => ({ ...w, auth: signWrite(k, w), basedOn: 3 })],
    [
      'a MAC one bit off',
      (w: ControlWrite, k: LocalKeystore) => {
        const auth = signWrite(k, w);
        const mac = Buffer.from(auth.mac, 'base64url');
        mac[0]! ^= 1;
        return { ...w, auth: { ...auth, mac: mac.toString('base64url') } };
      },
    ],
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
    await expect(versions.publish(EXAMPLE_CONFIG_TEXT, { by: 'a', source: 'cli', note: '', now: FIXED_NOW })).rejects.toMatchObject({
      code: 'KEY_UNAVAILABLE',
    });
    store.attach({ keystore });
    const number = await versions.publish(EXAMPLE_CONFIG_TEXT, { by: 'a', source: 'cli', note: '', now: FIXED_NOW });
    await versions.reload();
    expect(await versionIsAuthentic(versions, number, keystore)).toBe(true);
  });
});

describe('the data dir mirrors only authenticated configuration versions (VersionMirror)', () => {
  const write = (basedOn: number, body = EXAMPLE_CONFIG_TEXT, over: Partial<ControlWrite> = {}): ControlWrite => ({
    v: 1,
    history: 'config',
    basedOn,
    writer: `w${basedOn}`,
    at: FIXED_NOW.toISOString(),
    body,
    meta: { by: 'admin', source: 'portal', note: `v${basedOn + 1}` },
    ...over,
  });
  const signed = (k: LocalKeystore, w: ControlWrite) => ({ ...w, auth: signWrite(k, w) });
  const forged = (w: ControlWrite) => ({ ...w, auth: { key: 1, mac: Buffer.alloc(32, 7).toString('base64url') } });
  const process_ = async () => {
    const dataDir = await tempDir();
    const keystore = await LocalKeystore.open({ dataDir, masterKey: randomMasterKey(), now: () => FIXED_NOW });
    await ensureControlKey(keystore);
    const notices: string[] = [];
    const configs = new VersionMirror(await ConfigVersions.open(dataDir), (m) => notices.push(m));
    const mirror = await dataDirMirror(dataDir, undefined, configs);
    const versions = await ConfigVersions.open(dataDir);
    const log: AppendLog = { head: () => 0, append: async () => undefined, close: async () => {} };
    const store = controlStoreOver(log, 'memory', undefined, configs);
    return {
      dataDir,
      keystore,
      notices,
      configs,
      versions,
      store,
      deliver: (number: number, w: ControlWrite) => mirror({ history: 'config', number, write: w }),
    };
  };

  it('versions read before the key set opens wait; then only those that verify are mirrored, the newest of them active', async () => {
    const p = await process_();
    await p.deliver(1, signed(p.keystore, write(0)));
    await p.deliver(2, forged(write(1, `${EXAMPLE_CONFIG_TEXT}\n# widened\n`, { meta: { by: 'admin', source: 'portal', note: 'routine' } })));
    await p.versions.reload();
    expect(p.versions.versions()).toEqual([]);
    await p.store.attach({ versions: p.versions, keystore: p.keystore });
    await p.versions.reload();
    expect([p.versions.versions().map((v) => v.number), p.versions.active()]).toEqual([[1], 1]);
    expect(p.notices).toEqual([expect.stringMatching(/^configuration version 2 of the control store is not authenticated/)]);
    expect(p.notices.join()).not.toMatch(/widened|routine/);
    await expect(readFile(join(p.dataDir, 'config-versions/0002.yaml'))).rejects.toMatchObject({ code: 'ENOENT' });
    // after attach: judged as they arrive
    await p.deliver(3, forged(write(2)));
    await p.deliver(4, signed(p.keystore, write(3, `${EXAMPLE_CONFIG_TEXT}\n# genuine\n`)));
    await p.versions.reload();
    expect([p.versions.versions().map((v) => v.number), p.versions.active(), p.configs.refusedCount()]).toEqual([[1, 4], 4, 2]);
  });

  it('a forged version an older veil mirrored (and made active) is removed when the log delivers it again', async () => {
    const p = await process_();
    // as an older veil wrote it: every accepted version mirrored, the forged one active
    const unchecked = await dataDirMirror(p.dataDir);
    await unchecked({ history: 'config', number: 1, write: signed(p.keystore, write(0)) });
    await unchecked({ history: 'config', number: 2, write: forged(write(1)) });
    await p.versions.reload();
    expect(p.versions.active()).toBe(2);
    await p.deliver(1, signed(p.keystore, write(0)));
    await p.deliver(2, forged(write(1)));
    await p.store.attach({ versions: p.versions, keystore: p.keystore });
    await p.versions.reload();
    expect([p.versions.versions().map((v) => v.number), p.versions.active()]).toEqual([[1], 1]);
  });

  it('every read of a version checks its MAC again: a text changed in the data dir is not read, reverted to or run', async () => {
    const p = await process_();
    await p.store.attach({ versions: p.versions, keystore: p.keystore });
    await p.deliver(1, signed(p.keystore, write(0)));
    await p.versions.reload();
    expect(await p.versions.read(1)).toBe(EXAMPLE_CONFIG_TEXT);
    const file = p.versions.file(1);
    await chmod(file, 0o600);
    await writeFile(file, `${EXAMPLE_CONFIG_TEXT}\n# edited in place\n`);
    await expect(p.versions.read(1)).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringMatching(/not authenticated/) });
  });
});
