import { timingSafeEqual } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { MemoryKeyProvider, revealKeyBytes, VeilError, type KeyInfo, type KeyProvider, type KeyType, type SecretKey } from '../engine/index.ts';
import { parseHexMaterial } from './key-material.ts';
import { addRandom, assertKeyId, assertKeyType, copyInfo, toProvider, toRecords, wipe } from './key-records.ts';
import { withFileLock } from '../file-lock/index.ts';
import { readKeystoreFile, replaceKeystoreFile } from './keystore-file.ts';
import { decodeKeystore, encodeKeystore, type KeyRecord } from './keystore-format.ts';
import { decodeEnvelope, encodeEnvelope, isEnvelope, rewrapEnvelope, wrappedKeyOf } from './keyset-envelope.ts';
import type { KeyLease } from './key-lease.ts';
import { opensUnder } from './keyset-open.ts';
import type { Kms } from './kms/kms.ts';
import { errorCode } from './master-key.ts';
import { KeystoreError } from './errors.ts';

export const KEYSTORE_FILE = 'keystore.json';

/**
 * A shared log of key-set versions (the Kafka control store, src/control/kafka-control-log.ts): commit appends the whole
 * key-set document (encrypted: never a clear key) based on the version this process last read,
 * and resolves once it is read back: true when it was accepted (the follower has then written it
 * to keystore.json), false when another process's change got there first.
 */
export interface KeySetLog {
  head(): number;
  commit(document: Buffer, basedOn: number): Promise<boolean>;
  /**
   * whether keystore.json holds the log's newest key-set version (false when that one did not open
   * under this process's KEK and was not mirrored): a change is only based on the newest
   */
  current?(): boolean;
}

export interface LocalKeystoreOptions {
  dataDir: string;
  /** the KEK of the master-key format (keystore-format.ts): the embedded default */
  masterKey?: SecretKey;
  /**
   * a KEK behind the Kms port: the file is written in the envelope format (keyset-envelope.ts);
   * with a master key too, a master-key file is still read (and rewritten as an envelope on the
   * next change or `rewrap`)
   */
  kms?: Kms;
  now?: () => Date;
}

/**
 * The embedded KeyProvider: keys in `<dataDir>/keystore.json`, encrypted and authenticated under
 * the master key (format in keystore-format.ts). Reads are served from memory; every change
 * takes a lock file, re-reads the file (another process may have changed it), applies the change
 * and replaces the file atomically (temp file, fsync, rename). Material never leaves: there is
 * no export, and list()/info() carry metadata only.
 */
export class LocalKeystore implements KeyProvider {
  readonly path: string;
  private readonly dataDir: string;
  private readonly masterKey?: SecretKey;
  private kms?: Kms;
  private readonly now: () => Date;
  private view = new MemoryKeyProvider();
  private wrapped?: Buffer;
  private lease?: KeyLease;
  private log?: KeySetLog;

  private constructor(options: LocalKeystoreOptions) {
    if (!options.masterKey && !options.kms) throw new Error('a keystore needs a master key or a Kms');
    this.dataDir = options.dataDir;
    this.path = join(options.dataDir, KEYSTORE_FILE);
    this.masterKey = options.masterKey;
    this.kms = options.kms;
    this.now = options.now ?? (() => new Date());
  }

  /** Opens the keystore, creating an empty one (and the data directory, mode 0700) if absent. */
  static async open(options: LocalKeystoreOptions): Promise<LocalKeystore> {
    const keystore = new LocalKeystore(options);
    try {
      await mkdir(keystore.dataDir, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw keystore.ioError('cannot create the data directory', error);
    }
    const records = await keystore.read();
    if (records) {
      keystore.adopt(records);
    } else {
      await keystore.withLock(async () => {
        const current = await keystore.read();
        if (current) keystore.adopt(current);
        else await keystore.write([]);
      });
    }
    return keystore;
  }

  info(id: string): KeyInfo | undefined {
    const info = this.view.info(id);
    return info && copyInfo(info);
  }

  key(id: string, version: number): SecretKey | undefined {
    return this.view.key(id, version);
  }

  /** KeyProvider.assertUsable: refuses (KMS_UNAVAILABLE) once the KEK's lease ran out. */
  assertUsable(): void {
    this.lease?.check();
  }

  /** Commits changes to a shared log from now on (keystore.json is then its mirror). */
  useLog(log: KeySetLog): void {
    this.log = log;
  }

  /** Writes a key-set document the shared log accepted as this data dir's keystore.json. */
  static async mirror(dataDir: string, document: Buffer): Promise<void> {
    const path = join(dataDir, KEYSTORE_FILE);
    if ((await readKeystoreFile(path).catch(() => undefined))?.equals(document)) return;
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await replaceKeystoreFile(dataDir, path, document);
  }

  /** Whether a key-set document opens under this keystore's KEK (opensUnder). */
  opens(document: Buffer): Promise<boolean> {
    return opensUnder(document, { ...(this.masterKey ? { masterKey: this.masterKey } : {}), ...(this.kms ? { kms: this.kms } : {}) });
  }

  /** The lease that must stay valid for the keys to be used (key-lease.ts). */
  useLease(lease: KeyLease): void {
    this.lease = lease;
  }

  /** The KEK's wrap of the current data key (envelope format only): what a lease unwraps again. */
  wrappedDataKey(): Buffer | undefined {
    return this.wrapped && Buffer.from(this.wrapped);
  }

  /** What holds the KEK: the master key, or the Kms's description. */
  kekDescription(): string {
    return this.kms?.description ?? 'master key';
  }

  /**
   * Rotates the KEK: the key set as it is, its data key wrapped by `to` (a master-key file becomes
   * an envelope). No key and no protected value changes; processes using the old KEK read the
   * file again with the new one.
   */
  async rewrap(to: Kms): Promise<void> {
    await this.withLock(async () => {
      const basedOn = this.basedOn();
      const bytes = await this.readBytes();
      if (!bytes) throw new KeystoreError('KEYSTORE_INVALID', `keystore ${this.path} no longer exists`);
      let next: Buffer;
      if (isEnvelope(bytes)) {
        if (!this.kms) throw this.needsKms();
        next = await rewrapEnvelope(bytes, this.kms, to, this.path);
      } else {
        const records = this.decodeMasterKeyFile(bytes);
        try {
          next = await encodeEnvelope(records, to);
        } finally {
          wipe(records);
        }
      }
      // switched before the commit: a shared store's mirror reads the rewrapped version back and
      // checks that it opens under this keystore's KEK, which is then the new one
      const from = this.kms;
      this.kms = to;
      let accepted = false;
      try {
        accepted = await this.persist(next, basedOn);
      } finally {
        if (!accepted) this.kms = from;
      }
      if (!accepted) throw new KeystoreError('KEYSET_CONFLICT', 'another process changed the key set during the rewrap: run it again');
    });
  }

  list(): KeyInfo[] {
    return this.view.ids().map((id) => copyInfo(this.view.info(id) as KeyInfo));
  }

  /** Re-reads the file, picking up changes made by other processes. */
  async reload(): Promise<void> {
    const records = await this.read();
    if (!records) throw new KeystoreError('KEYSTORE_INVALID', `keystore ${this.path} no longer exists`);
    this.adopt(records);
  }

  /** A new key with random material of the type's default size. */
  async create(id: string, type: KeyType): Promise<KeyInfo> {
    assertKeyId(id);
    assertKeyType(type);
    return this.change((keys) => {
      if (keys.info(id)) throw new KeystoreError('KEY_EXISTS', `key ${id} exists already; use rotate for a new version`);
      addRandom(keys, id, type, this.stamp());
      return id;
    });
  }

  /** A new random version of an existing key; it becomes primary, older versions stay usable. */
  async rotate(id: string): Promise<KeyInfo> {
    assertKeyId(id);
    return this.change((keys) => {
      const info = keys.info(id);
      if (!info) throw new KeystoreError('KEY_NOT_FOUND', `no key ${id} in keystore ${this.path}`);
      addRandom(keys, id, info.type, this.stamp());
      return id;
    });
  }

  /**
   * Destroys every version of a key but its primary (a rotated wrapping key's older versions, once
   * nothing they wrap is in use): the key set written after holds no trace of them.
   */
  async destroyOlderVersions(id: string): Promise<{ info: KeyInfo; destroyed: number[] }> {
    assertKeyId(id);
    let destroyed: number[] = [];
    const info = await this.change((keys) => {
      const current = keys.info(id);
      if (!current) throw new KeystoreError('KEY_NOT_FOUND', `no key ${id} in keystore ${this.path}`);
      destroyed = current.versions.map((v) => v.version).filter((v) => v !== current.primary);
      keys.destroyVersions(id, destroyed);
      return id;
    });
    return { info, destroyed };
  }

  /**
   * Existing material (hex), for migrations: a new key, or a new primary version of an existing
   * key of the same type. Errors describe the input, never echo it.
   */
  async import(id: string, type: KeyType, hex: string): Promise<KeyInfo> {
    assertKeyId(id);
    assertKeyType(type);
    const bytes = parseHexMaterial(type, hex);
    try {
      return await this.change((keys) => {
        const info = keys.info(id);
        if (info && info.type !== type) {
          throw new KeystoreError('KEY_EXISTS', `key ${id} exists with type ${info.type}; imported material must be of the same type, not ${type}`);
        }
        for (const version of info?.versions ?? []) {
          const existing = revealKeyBytes(keys.key(id, version.version) as SecretKey);
          if (existing.length === bytes.length && timingSafeEqual(existing, bytes)) {
            throw new KeystoreError('KEY_EXISTS', `key ${id} holds this material already, as version ${version.version}`);
          }
        }
        keys.add(id, type, bytes, this.stamp(), 'imported');
        return id;
      });
    } finally {
      bytes.fill(0);
    }
  }

  private adopt(records: KeyRecord[]): void {
    this.view = toProvider(records);
    wipe(records);
  }

  private stamp(): string {
    return this.now().toISOString();
  }

  /**
   * Lock, re-read, apply, write, then publish the new view. With a shared log the write is a
   * commit: a change that lost to another process's is applied again to the key set that won.
   */
  private async change(apply: (keys: MemoryKeyProvider) => string): Promise<KeyInfo> {
    for (let attempt = 1; ; attempt++) {
      const info = await this.withLock(async () => {
        const basedOn = this.basedOn();
        const records = await this.read();
        if (!records) throw new KeystoreError('KEYSTORE_INVALID', `keystore ${this.path} no longer exists`);
        const keys = toProvider(records);
        wipe(records);
        const id = apply(keys);
        const updated = toRecords(keys);
        let bytes: Buffer;
        try {
          bytes = await this.encode(updated);
        } finally {
          wipe(updated);
        }
        if (!(await this.persist(bytes, basedOn))) return undefined;
        this.view = keys;
        return copyInfo(keys.info(id) as KeyInfo);
      });
      if (info) return info;
      if (attempt >= 10) throw new KeystoreError('KEYSET_CONFLICT', `a change to keystore ${this.path} lost the race to other processes 10 times in a row`);
    }
  }

  /** The log's head a change is based on; refused while keystore.json is not that version. */
  private basedOn(): number {
    if (this.log?.current && !this.log.current()) {
      throw new KeystoreError(
        'KEYSTORE_INVALID',
        `the control store's newest key-set version does not open under this process's KEK (it was rotated elsewhere): no change is made to keystore ${this.path} until this process runs with that KEK`,
      );
    }
    return this.log?.head() ?? 0;
  }

  private async encode(records: readonly KeyRecord[]): Promise<Buffer> {
    return this.kms ? encodeEnvelope(records, this.kms) : encodeKeystore(records, revealKeyBytes(this.masterKey!));
  }

  /** The new file: written here, or committed to the shared log (false: another change won). */
  private async persist(bytes: Buffer, basedOn: number): Promise<boolean> {
    if (this.log) {
      if (!(await this.log.commit(bytes, basedOn))) return false;
    } else {
      await this.writeBytes(bytes);
    }
    if (isEnvelope(bytes)) this.wrapped = wrappedKeyOf(bytes, this.path);
    return true;
  }

  /** The decoded file; undefined when it does not exist. */
  private async read(): Promise<KeyRecord[] | undefined> {
    const bytes = await this.readBytes();
    if (!bytes) return undefined;
    if (!isEnvelope(bytes)) return this.decodeMasterKeyFile(bytes);
    if (!this.kms) throw this.needsKms();
    const records = await decodeEnvelope(bytes, this.kms, this.path);
    this.wrapped = wrappedKeyOf(bytes, this.path);
    return records;
  }

  private decodeMasterKeyFile(bytes: Buffer): KeyRecord[] {
    if (!this.masterKey)
      throw new KeystoreError(
        'KEYSTORE_INVALID',
        `keystore ${this.path} is encrypted under a master key: set VEIL_MASTER_KEY to read it (and rewrap it under the KMS)`,
      );
    return decodeKeystore(bytes, revealKeyBytes(this.masterKey), this.path);
  }

  private needsKms(): VeilError {
    return new KeystoreError('KEYSTORE_INVALID', `keystore ${this.path} is a key set wrapped by a KMS: set VEIL_KMS to read it`);
  }

  private async readBytes(): Promise<Buffer | undefined> {
    try {
      return await readKeystoreFile(this.path);
    } catch (error) {
      throw this.ioError('cannot read', error);
    }
  }

  private async write(records: readonly KeyRecord[]): Promise<void> {
    const bytes = await this.encode(records);
    await this.writeBytes(bytes);
    if (this.kms) this.wrapped = wrappedKeyOf(bytes, this.path);
  }

  private async writeBytes(bytes: Buffer): Promise<void> {
    try {
      await replaceKeystoreFile(this.dataDir, this.path, bytes);
    } catch (error) {
      throw this.ioError('cannot write', error);
    }
  }

  private async withLock<T>(body: () => Promise<T>): Promise<T> {
    return withFileLock(
      `${this.path}.lock`,
      {
        busy: () =>
          new KeystoreError('KEYSTORE_INVALID', `keystore ${this.path} is locked by another veil process; if none is running, remove ${this.path}.lock`),
        failed: (error) => this.ioError('cannot create the lock file for', error),
      },
      body,
    );
  }

  private ioError(what: string, error: unknown): VeilError {
    const target = what.endsWith('directory') ? this.dataDir : `keystore ${this.path}`;
    return new KeystoreError('KEYSTORE_INVALID', `${what} ${target} (${errorCode(error) ?? 'error'})`, { cause: error });
  }
}
