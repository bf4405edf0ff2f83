import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type ControlWrite, ensureControlKey, KeysetMirror, signWrite, writeIsAuthentic } from '../../src/control/index.ts';
import { SecretKey } from '../../src/engine/index.ts';
import { masterKeyKms } from '../helpers/master-key-kms.ts';
import { KmsError } from '../../src/keystore/kms/kms.ts';
import { opensUnder } from '../../src/keystore/keyset-open.ts';
import { KEYSTORE_FILE, LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { FIXED_NOW, randomMasterKey, tempDir } from '../keystore/helpers.ts';

/** A key set under `masterKey` with its control key, and its documents, each with one more key than the last. */
async function genuine(masterKey: SecretKey, count: number): Promise<{ keystore: LocalKeystore; documents: Buffer[] }> {
  const dir = await tempDir();
  const keystore = await LocalKeystore.open({ dataDir: dir, masterKey, now: () => FIXED_NOW });
  await ensureControlKey(keystore);
  const documents: Buffer[] = [];
  for (let i = 1; i <= count; i++) {
    await keystore.create(`k${i}`, 'aes-gcm');
    documents.push(await readFile(join(dir, KEYSTORE_FILE)));
  }
  return { keystore, documents };
}

/** What a writer without the key set can append: the shape of a key set, its bytes made up. */
function forgedDocument(like: Buffer): Buffer {
  const value = JSON.parse(like.toString()) as Record<string, unknown>;
  value.ciphertext = randomBytes(200).toString('base64');
  return Buffer.from(`${JSON.stringify(value, null, 2)}\n`);
}

/** The log's write of version `number`; signed with `signer`'s control key when given. */
function writeOf(number: number, document: Buffer, signer?: LocalKeystore): ControlWrite {
  const w: ControlWrite = {
    v: 1,
    history: 'keyset',
    basedOn: number - 1,
    writer: `w${number}`,
    at: FIXED_NOW.toISOString(),
    body: document.toString('base64'),
  };
  return signer ? { ...w, auth: signWrite(signer, w) } : w;
}

const setup = async () => {
  const master = randomMasterKey();
  const dataDir = await tempDir();
  const notices: string[] = [];
  const mirror = new KeysetMirror(dataDir, (m) => notices.push(m));
  const judge = (d: Buffer) => opensUnder(d, { masterKey: master });
  const mirrored = () => readFile(join(dataDir, KEYSTORE_FILE)).catch(() => undefined);
  /** the keystore opened on the mirror, attached as a process attaches it */
  const open = async () => {
    const keystore = await LocalKeystore.open({ dataDir, masterKey: master, now: () => FIXED_NOW });
    mirror.attach({ opens: (d) => keystore.opens(d), authentic: (w) => writeIsAuthentic(keystore, w) });
    return keystore;
  };
  return { master, dataDir, notices, mirror, judge, mirrored, open };
};

describe('the data dir mirrors only key sets that open under its KEK', () => {
  it('read at start: the newest version that opens is mirrored; a newer forged one is ignored, a newer genuine one under another KEK stops key changes', async () => {
    const { master, notices, mirror, judge, mirrored, open } = await setup();
    const {
      keystore: source,
      documents: [v1, v2],
    } = await genuine(master, 2);
    // the same key set with its data key wrapped by a KEK this process does not hold (a KEK rotated elsewhere)
    const {
      documents: [underOtherKek],
    } = await genuine(randomMasterKey(), 1);
    const log = [writeOf(1, v1!), writeOf(2, v2!, source), writeOf(3, forgedDocument(v2!)), writeOf(4, underOtherKek!, source)];
    for (const [i, w] of log.entries()) await mirror.accept(i + 1, w);
    expect(await mirrored()).toBeUndefined();
    await mirror.settle(judge);
    expect((await mirrored())!.equals(v2!)).toBe(true);
    expect(mirror.current()).toBe(false);
    const keystore = await open();
    expect(keystore.list().map((k) => k.id)).toEqual(['k1', 'k2', 'veil-control']);
    expect(mirror.status()).toEqual({ head: 4, mirrored: 2, foreign: 4 });
    expect(mirror.current()).toBe(false);
    expect(notices).toEqual([
      expect.stringContaining("key-set version 3 of the control store does not open under this process's KEK and carries no valid MAC"),
      expect.stringContaining("key-set version 4 of the control store is the key set's own (its MAC verifies) but does not open"),
    ]);
    const commits: number[] = [];
    keystore.useLog({ head: () => mirror.status().head, commit: async (_d, basedOn) => (commits.push(basedOn), true), current: () => mirror.current() });
    await expect(keystore.create('k9', 'aes-gcm')).rejects.toMatchObject({
      code: 'KEYSTORE_INVALID',
      message: expect.stringMatching(/newest key-set version does not open under this process's KEK/),
    });
    expect(commits).toEqual([]);
  });

  it('followed: a genuine version is mirrored; a forged one and a replay of an earlier one are not, and do not stop key changes', async () => {
    const { master, notices, mirror, judge, mirrored, open } = await setup();
    const {
      keystore: source,
      documents: [v1, v2, v3],
    } = await genuine(master, 3);
    await mirror.accept(1, writeOf(1, v1!));
    await mirror.settle(judge);
    await open();
    await mirror.accept(2, writeOf(2, v2!, source));
    expect((await mirrored())!.equals(v2!)).toBe(true);
    // forged: well-formed, a MAC made up
    await mirror.accept(3, { ...writeOf(3, forgedDocument(v2!)), auth: { key: 1, mac: randomBytes(32).toString('base64url') } });
    expect((await mirrored())!.equals(v2!)).toBe(true);
    expect(mirror.current()).toBe(true);
    await mirror.accept(4, writeOf(4, v3!, source));
    // v1 again, appended on the head by someone replaying the topic: it would roll keys back
    await mirror.accept(5, writeOf(5, v1!));
    expect((await mirrored())!.equals(v3!)).toBe(true);
    expect(mirror.status()).toEqual({ head: 5, mirrored: 4 });
    expect(mirror.current()).toBe(true);
    expect(notices).toEqual([
      expect.stringContaining('key-set version 3 of the control store does not open'),
      expect.stringContaining('key-set version 5 of the control store repeats version 1 byte for byte'),
    ]);
    // names versions, never shows a document
    for (const n of notices) expect(n).not.toMatch(/ciphertext|[A-Za-z0-9+/]{40}/);
  });

  it('a change made after a forged version is based on the head and supersedes it', async () => {
    const { master, dataDir, mirror, judge, open } = await setup();
    const {
      keystore: source,
      documents: [v1, v2],
    } = await genuine(master, 2);
    await mirror.accept(1, writeOf(1, v1!));
    await mirror.settle(judge);
    const keystore = await open();
    const commits: number[] = [];
    keystore.useLog({
      head: () => mirror.status().head,
      commit: async (d, basedOn) => {
        commits.push(basedOn);
        await mirror.accept(basedOn + 1, writeOf(basedOn + 1, d, source));
        return true;
      },
      current: () => mirror.current(),
    });
    await mirror.accept(2, writeOf(2, forgedDocument(v2!)));
    await keystore.create('k9', 'aes-gcm');
    expect(commits).toEqual([2]);
    expect(mirror.status()).toEqual({ head: 3, mirrored: 3 });
    const reopened = await LocalKeystore.open({ dataDir, masterKey: master });
    expect(reopened.list().map((k) => k.id)).toEqual(['k1', 'k9', 'veil-control']);
  });

  it('a store none of whose key sets opens here: this process does not start on a key set of its own', async () => {
    const { mirror, judge, mirrored } = await setup();
    const {
      keystore: other,
      documents: [v1],
    } = await genuine(randomMasterKey(), 1);
    await mirror.accept(1, writeOf(1, v1!, other));
    await expect(mirror.settle(judge)).rejects.toMatchObject({
      code: 'KEYSTORE_INVALID',
      message: expect.stringMatching(/none of the control store's 1 key-set version/),
    });
    expect(await mirrored()).toBeUndefined();
  });

  it('a KEK that cannot answer fails the mirroring and writes nothing; the version delivered again once it answers is mirrored, not taken for a replay', async () => {
    const { master, notices, mirror, judge, mirrored } = await setup();
    const {
      documents: [v1],
    } = await genuine(master, 1);
    let down = true;
    await mirror.settle(async (d) => {
      if (down) throw new KmsError('KMS_UNAVAILABLE', 'kms down');
      return judge(d);
    });
    await expect(mirror.accept(1, writeOf(1, v1!))).rejects.toMatchObject({ code: 'KMS_UNAVAILABLE' });
    expect(await mirrored()).toBeUndefined();
    down = false;
    await mirror.accept(1, writeOf(1, v1!));
    expect((await mirrored())!.equals(v1!)).toBe(true);
    expect(mirror.status()).toEqual({ head: 1, mirrored: 1 });
    expect(notices).toEqual([]);
  });

  it('a KEK rotated by this process (veil keys rewrap) is mirrored here as the key set it is, not taken for a foreign one', async () => {
    const dataDir = await tempDir();
    const notices: string[] = [];
    const mirror = new KeysetMirror(dataDir, (m) => notices.push(m));
    const kekA = masterKeyKms(SecretKey.fromBytes(new Uint8Array(32).fill(1)));
    const kekB = masterKeyKms(SecretKey.fromBytes(new Uint8Array(32).fill(2)));
    await mirror.settle((d) => opensUnder(d, { kms: kekA }));
    const keystore = await LocalKeystore.open({ dataDir, kms: kekA, now: () => FIXED_NOW });
    mirror.attach({ opens: (d) => keystore.opens(d), authentic: (w) => writeIsAuthentic(keystore, w) });
    let head = 0;
    keystore.useLog({
      head: () => head,
      current: () => mirror.current(),
      commit: async (d, basedOn) => {
        head = basedOn + 1;
        await mirror.accept(head, writeOf(head, d, keystore.info('veil-control') ? keystore : undefined));
        return true;
      },
    });
    await ensureControlKey(keystore);
    await keystore.create('k1', 'aes-gcm');
    await keystore.rewrap(kekB);
    expect(mirror.status()).toEqual({ head: 3, mirrored: 3 });
    expect(notices).toEqual([]);
    expect(await opensUnder((await readFile(join(dataDir, KEYSTORE_FILE)))!, { kms: kekB })).toBe(true);
    await keystore.rotate('k1');
    expect(mirror.status()).toEqual({ head: 4, mirrored: 4 });
  });

  it('a version the log delivers while settle is still choosing is judged after it, in order', async () => {
    const { master, mirror, judge, mirrored } = await setup();
    const {
      keystore: source,
      documents: [v1, v2],
    } = await genuine(master, 2);
    await mirror.accept(1, writeOf(1, v1!));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const settled = mirror.settle(async (d) => {
      await gate;
      return judge(d);
    });
    const late = mirror.accept(2, writeOf(2, v2!, source));
    release();
    await Promise.all([settled, late]);
    expect((await mirrored())!.equals(v2!)).toBe(true);
    expect(mirror.status()).toEqual({ head: 2, mirrored: 2 });
    expect(mirror.current()).toBe(true);
  });
});
