import { createHash } from 'node:crypto';

import { LocalKeystore } from '../keystore/index.ts';
import type { ControlWrite } from './control-log.ts';
import { KeystoreError } from '../keystore/errors.ts';

/**
 * Whether a key-set document opens under this process's KEK: false when it does not (damaged,
 * forged, under another KEK); throws when the KEK cannot answer now (KMS_UNAVAILABLE, retriable).
 */
export type KeysetJudge = (document: Buffer) => Promise<boolean>;

/** Whether a key-set write carries a valid MAC under the key set's control key (control-store.ts). */
export type WriteAuthenticator = (write: ControlWrite) => boolean;

/**
 * The data dir's keystore.json as a mirror of the control store's key-set history, written only
 * with documents this process can open. Anyone who can write to the topic can append a key-set
 * record that is accepted as the newest version (the log's rule is positional); without the KEK
 * its content cannot be a key set, so it is not mirrored: running processes keep the keys they
 * hold and a process starting later opens the newest version that is a key set.
 *
 * A version that does not open is one of two things, told apart by its MAC under the key set's
 * control key (key-set writes are signed like configuration writes):
 * - forged (no valid MAC): ignored. A later change is based on the log's head and supersedes it.
 * - genuine, under a KEK this process does not hold (the KEK was rotated elsewhere): no key change
 *   is made here until this process runs with that KEK, since a change based on the older version
 *   would undo the rotation.
 * A record repeating an earlier version byte for byte (a replay, which would roll keys back) is
 * ignored too.
 *
 * While the store is read up to its end at start, no KEK is at hand yet (the keystore opens
 * after): versions are kept in memory until `settle`, which mirrors the newest that opens (one KEK
 * call in the usual case rather than one per version); the versions after it are told apart once
 * the keystore is open (`attach`).
 */
export class KeysetMirror {
  private readonly dataDir: string;
  private readonly notice: (message: string) => void;
  private opens?: KeysetJudge;
  private authentic?: WriteAuthenticator;
  private pending: { number: number; write: ControlWrite }[] = [];
  /** versions after the mirrored one that did not open, not told apart yet */
  private unjudged: { number: number; write: ControlWrite }[] = [];
  /** the first genuine version after the mirrored one that does not open here */
  private foreign?: number;
  private readonly seen = new Map<string, number>();
  private head = 0;
  private mirrored = 0;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(dataDir: string, notice: (message: string) => void = () => undefined) {
    this.dataDir = dataDir;
    this.notice = notice;
  }

  /** An accepted key-set write of the log, in log order (the same one again after its mirroring failed). */
  accept(number: number, write: ControlWrite): Promise<void> {
    return this.serial(() => this.acceptNow(number, write));
  }

  /** Mirrors the newest version read so far that opens under the KEK; later versions are judged as they arrive. */
  settle(opens: KeysetJudge): Promise<void> {
    return this.serial(() => this.settleNow(opens));
  }

  private async acceptNow(number: number, write: ControlWrite): Promise<void> {
    this.head = number;
    const document = documentOf(write);
    const digest = createHash('sha256').update(document).digest('hex');
    const earlier = this.seen.get(digest);
    // the same version delivered again (its mirroring failed: a KMS that did not answer) is not a replay
    if (earlier !== undefined && earlier !== number) {
      this.notice(`key-set version ${number} of the control store repeats version ${earlier} byte for byte (a replay): ignored`);
      return;
    }
    this.seen.set(digest, number);
    if (!this.opens) {
      this.pending.push({ number, write });
      return;
    }
    if (await this.opens(document)) return this.write(number, document);
    this.unjudged.push({ number, write });
    this.judgeUnopened();
  }

  private async settleNow(opens: KeysetJudge): Promise<void> {
    const pending = this.pending;
    let newest = -1;
    for (let i = pending.length - 1; i >= 0 && newest < 0; i--) if (await opens(documentOf(pending[i]!.write))) newest = i;
    // a store with key sets none of which opens: this process has the wrong KEK (or the store only
    // forgeries); starting on an empty key set of its own would protect under keys no one else has
    if (pending.length && newest < 0) {
      throw new KeystoreError(
        'KEYSTORE_INVALID',
        `none of the control store's ${pending.length} key-set version(s) opens under this process's KEK: check VEIL_MASTER_KEY / VEIL_KMS`,
      );
    }
    if (newest >= 0) await this.write(pending[newest]!.number, documentOf(pending[newest]!.write));
    this.unjudged = pending.slice(newest + 1);
    this.pending = [];
    this.opens = opens;
  }

  /** The open keystore's own checks from now on: whether a document opens (it follows its KEK) and a write's MAC. */
  attach(parts: { opens: KeysetJudge; authentic: WriteAuthenticator }): void {
    this.opens = parts.opens;
    this.authentic = parts.authentic;
    this.judgeUnopened();
  }

  /** Whether this process may change the key set: no genuine version newer than keystore.json's is unopened here. */
  current(): boolean {
    return this.foreign === undefined && this.unjudged.length === 0;
  }

  /** The newest key-set version of the store, the one keystore.json holds, and the first genuine one this KEK cannot open. */
  status(): { head: number; mirrored: number; foreign?: number } {
    return { head: this.head, mirrored: this.mirrored, ...(this.foreign !== undefined ? { foreign: this.foreign } : {}) };
  }

  /**
   * One mirroring at a time, in call order: a version the log delivers while `settle` is still
   * choosing waits for it, and two versions never race to write keystore.json.
   */
  private serial<T>(step: () => Promise<T>): Promise<T> {
    const run = this.chain.then(step, step);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private judgeUnopened(): void {
    if (!this.authentic) return;
    for (const { number, write } of this.unjudged) {
      if (this.authentic(write)) {
        this.foreign ??= number;
        this.notice(
          `key-set version ${number} of the control store is the key set's own (its MAC verifies) but does not open under this process's KEK, which was rotated elsewhere: the keys of version ${this.mirrored || 'none'} stay, and this process makes no key change until it runs with the new KEK`,
        );
      } else {
        this.notice(
          `key-set version ${number} of the control store does not open under this process's KEK and carries no valid MAC of the key set (written by someone without it): ignored`,
        );
      }
    }
    this.unjudged = [];
  }

  private async write(number: number, document: Buffer): Promise<void> {
    await LocalKeystore.mirror(this.dataDir, document);
    this.mirrored = number;
    this.foreign = undefined;
  }
}

function documentOf(write: ControlWrite): Buffer {
  return Buffer.from(write.body, 'base64');
}
