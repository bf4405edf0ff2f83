import type { ConfigVersions } from './config-versions.ts';
import type { Accepted, ControlWrite } from './control-log.ts';

/** Whether a configuration write carries a MAC that verifies under the key set's control key; may re-read the key set once. */
export type VersionAuthenticator = (write: ControlWrite) => Promise<boolean>;

/**
 * The data dir's config-versions/ as a mirror of the control store's configuration history,
 * written only with versions whose MAC verifies under the key set's control key. Anyone who can
 * write to the topic can append a well-formed version that the log accepts (its rule is
 * positional), but without the key set it carries no valid MAC: it is not mirrored, so it never
 * becomes the active version, is never listed by the portal, never run, reverted to or exported —
 * and a process starting later starts on the newest authenticated version, whatever follows it.
 *
 * While the store is read up to its end at start, the key set is not open yet (it opens after
 * the key-set history is settled): versions wait in memory until `attach`, then are judged in log
 * order. A version a data dir mirrored before this rule (an older veil) that does not verify is
 * removed from the mirror when the log delivers it again.
 */
export class VersionMirror {
  private readonly versions: ConfigVersions;
  private readonly notice: (message: string) => void;
  private authentic?: VersionAuthenticator;
  private pending: Accepted[] = [];
  private refused = 0;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(versions: ConfigVersions, notice: (message: string) => void = () => undefined) {
    this.versions = versions;
    this.notice = notice;
  }

  /** An accepted configuration write of the log, in log order. */
  accept(entry: Accepted): Promise<void> {
    return this.serial(async () => {
      // a write that fails rejects: the log delivers the same record again
      if (this.authentic) return this.judge(entry);
      this.pending.push(entry);
    });
  }

  /**
   * The open key set's check from now on; the versions read before it are judged first, in log
   * order (a failed write rejects: the process does not start on a mirror it could not write).
   */
  attach(authentic: VersionAuthenticator): Promise<void> {
    return this.serial(async () => {
      this.authentic = authentic;
      const pending = this.pending;
      this.pending = [];
      for (const entry of pending) await this.judge(entry);
    });
  }

  /** How many versions of the log were refused (not authenticated) so far. */
  refusedCount(): number {
    return this.refused;
  }

  private async judge(entry: Accepted): Promise<void> {
    const w = entry.write;
    if (await this.authentic!(w)) {
      const meta = w.meta ?? { by: 'unknown', source: 'portal' as const, note: '' };
      await this.versions.mirror(entry.number, w.body, {
        publishedAt: w.at,
        by: meta.by,
        source: meta.source,
        note: meta.note,
        auth: { key: w.auth!.key, mac: w.auth!.mac, basedOn: w.basedOn, writer: w.writer, meta: w.meta !== undefined },
      });
      return;
    }
    this.refused++;
    // the number, never the text, author or note the writer chose
    this.notice(
      `configuration version ${entry.number} of the control store is not authenticated by the key set (veil-control): not mirrored, never run (written by someone without the key set)`,
    );
    await this.versions.forget(entry.number);
  }

  private serial<T>(step: () => Promise<T>): Promise<T> {
    const run = this.chain.then(step, step);
    this.chain = run.catch(() => undefined);
    return run;
  }
}
