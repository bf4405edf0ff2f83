import { statSync, writeSync } from 'node:fs';
import { open, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import type { AuditEvent, AuditPage, AuditSink } from './audit-sink.ts';

/** When the audit log rotates and how many rotated files are kept (`audit.log.1` … `.N`). */
export interface AuditRotation {
  rotateBytes: number;
  keepFiles: number;
}

export const DEFAULT_AUDIT_ROTATION: AuditRotation = { rotateBytes: 64 * 1024 * 1024, keepFiles: 8 };

/** Bytes one page of the audit view may read, and the longest record it reads back. */
const PAGE_READ_BYTES = 2 * 1024 * 1024;
const CHUNK = 64 * 1024;
const MAX_RECORD = 1024 * 1024;

/**
 * JSON lines appended to a file (mode 0600); each record is written before the call proceeds.
 * The file rotates by size: `audit.log` → `audit.log.1` → … → `audit.log.<keepFiles>`, the oldest
 * deleted, so the log never takes more than (keepFiles + 1) × rotateBytes of disk, plus the few
 * records other processes append while one of them rotates. Several processes may append to one log (serve workers, gateway, responders): before each
 * record a writer checks that its file is still `audit.log` and reopens it when another process
 * rotated it, so no record goes into a renamed or deleted file.
 */
export class FileAuditSink implements AuditSink {
  private handle: Promise<{ file: FileHandle; ino: number }> | undefined;
  private readonly path: string;
  private readonly rotation: AuditRotation;
  /** records of this process are written one after the other, so a rotation never splits one */
  private queue: Promise<unknown> = Promise.resolve();
  /** records on the queue not yet written: the synchronous path runs only when there are none */
  private pending = 0;
  /** the open file, once opened: what the synchronous path writes to */
  private opened: { file: FileHandle; ino: number } | undefined;

  constructor(path: string, rotation: AuditRotation = DEFAULT_AUDIT_ROTATION) {
    this.path = path;
    this.rotation = rotation;
  }

  /**
   * Appends one record. When nothing is queued and the file is open, still `audit.log` and not full,
   * it is written at once, synchronously: a stat and an append of one line to the page cache cost
   * less than the two thread-pool round trips (and the wake-ups of a loaded host, the gateway's
   * tail latency) of the asynchronous path, which opening, reopening and rotating still take.
   */
  record(event: AuditEvent): Promise<void> {
    const line = `${JSON.stringify(event)}\n`;
    if (this.pending === 0 && this.opened && this.appendNow(line, this.opened)) return Promise.resolve();
    this.pending++;
    const run = this.queue.then(() => this.append(line)).finally(() => this.pending--);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** The synchronous append; false when the file must be reopened or rotated first (the queue does it). */
  private appendNow(line: string, current: { file: FileHandle; ino: number }): boolean {
    let onDisk;
    try {
      onDisk = statSync(this.path, { throwIfNoEntry: false });
    } catch {
      return false;
    }
    if (!onDisk || onDisk.ino !== current.ino || (onDisk.size > 0 && onDisk.size + Buffer.byteLength(line) > this.rotation.rotateBytes)) return false;
    const bytes = Buffer.from(line);
    let written = 0;
    try {
      while (written < bytes.length) written += writeSync(current.file.fd, bytes, written);
    } catch (e) {
      // nothing written: the queue tries again (and answers the failure); a partial line cannot be taken back
      if (written === 0) return false;
      throw e;
    }
    return true;
  }

  private async append(line: string): Promise<void> {
    let current = await this.current();
    const onDisk = await stat(this.path).catch(() => undefined);
    if (!onDisk || onDisk.ino !== current.ino) current = await this.reopen();
    else if (onDisk.size > 0 && onDisk.size + Buffer.byteLength(line) > this.rotation.rotateBytes) {
      await this.rotate(onDisk.ino);
      current = await this.reopen();
    }
    await current.file.write(line);
  }

  private current(): Promise<{ file: FileHandle; ino: number }> {
    const opening = (this.handle ??= open(this.path, 'a', 0o600).then(async (file) => {
      const current = { file, ino: (await file.stat()).ino };
      if (this.handle === opening) this.opened = current;
      return current;
    }));
    // a file that cannot be opened now (its directory missing or unwritable) may be later: open again next time
    opening.catch(() => {
      if (this.handle === opening) this.handle = undefined;
    });
    return opening;
  }

  private async reopen(): Promise<{ file: FileHandle; ino: number }> {
    const old = this.handle;
    this.handle = undefined;
    this.opened = undefined;
    if (old) await (await old.catch(() => undefined))?.file.close().catch(() => undefined);
    return this.current();
  }

  /**
   * Rotates `audit.log` if it is still the file (inode) this writer found full. Writers of other
   * processes may decide the same at the same moment: `audit.log.lock` (created exclusively) lets
   * one of them rotate; the others write on and follow the rotation at their next record. A lock
   * left by a process that died while rotating is removed after 10 s.
   */
  private async rotate(fullIno: number): Promise<void> {
    const lockPath = `${this.path}.lock`;
    let lock: FileHandle;
    try {
      lock = await open(lockPath, 'wx', 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const held = await stat(lockPath).catch(() => undefined);
      if (held && Date.now() - held.mtimeMs > 10_000) await rm(lockPath, { force: true });
      return;
    }
    try {
      const onDisk = await stat(this.path).catch(() => undefined);
      if (onDisk?.ino !== fullIno) return; // another process rotated it already
      const n = this.rotation.keepFiles;
      await rm(`${this.path}.${n}`, { force: true });
      for (let i = n - 1; i >= 1; i--) await rename(`${this.path}.${i}`, `${this.path}.${i + 1}`).catch(ignoreMissing);
      await rename(this.path, `${this.path}.1`).catch(ignoreMissing);
    } finally {
      await lock.close();
      await rm(lockPath, { force: true });
    }
  }

  async close(): Promise<void> {
    await this.queue;
    this.opened = undefined;
    if (this.handle) await (await this.handle.catch(() => undefined))?.file.close();
    this.handle = undefined;
  }

  async recent(limit: number): Promise<AuditEvent[]> {
    return (await this.page({ limit })).events;
  }

  /**
   * Reads backwards from the cursor (`<file number>.<byte offset>`; 0 is audit.log) across the
   * rotated files, until `limit` records or PAGE_READ_BYTES: a page never reads the whole log. A
   * record longer than PAGE_READ_BYTES is skipped. A rotation between two pages shifts the files
   * under the cursor: the next page then starts in the renamed file at the same offset.
   */
  async page(options: { limit: number; cursor?: string }): Promise<AuditPage> {
    const m = /^(\d{1,3})\.(\d{1,16})$/.exec(options.cursor ?? '');
    let fileNo = m ? Number(m[1]) : 0;
    let end: number | undefined = m ? Number(m[2]) : undefined;
    const events: AuditEvent[] = [];
    let budget = PAGE_READ_BYTES;
    while (events.length < options.limit && fileNo <= this.rotation.keepFiles && budget > 0) {
      const read = await readBackwards(fileNo === 0 ? this.path : `${this.path}.${fileNo}`, end, options.limit - events.length, budget);
      events.push(...read.events);
      budget -= read.bytes;
      if (read.rest > 0) return { events, next: `${fileNo}.${read.rest}` };
      fileNo++;
      end = undefined;
    }
    const older = fileNo <= this.rotation.keepFiles && (await stat(`${this.path}.${fileNo}`).catch(() => undefined)) !== undefined;
    return { events, ...(older ? { next: `${fileNo}.${Number.MAX_SAFE_INTEGER}` } : {}) };
  }
}

const ignoreMissing = (e: NodeJS.ErrnoException) => {
  if (e.code !== 'ENOENT') throw e;
};

/** Records of one file, newest first, ending at byte `end`; `rest` is where the next read ends (0: file done). */
async function readBackwards(
  path: string,
  end: number | undefined,
  limit: number,
  budget: number,
): Promise<{ events: AuditEvent[]; rest: number; bytes: number }> {
  let file: FileHandle;
  try {
    file = await open(path, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { events: [], rest: 0, bytes: 0 };
    throw e;
  }
  try {
    const size = (await file.stat()).size;
    let pos = Math.min(end ?? size, size);
    let tail = Buffer.alloc(0);
    const events: AuditEvent[] = [];
    let bytes = 0;
    while (pos > 0 && events.length < limit && bytes < budget) {
      const n = Math.min(CHUNK, pos);
      const chunk = Buffer.alloc(n);
      await file.read(chunk, 0, n, pos - n);
      pos -= n;
      bytes += n;
      const data = Buffer.concat([chunk, tail]);
      let stop = data.length;
      while (events.length < limit) {
        const lineEnd = stop > 0 && data[stop - 1] === 10 ? stop - 1 : stop;
        const nl = lineEnd > 0 ? data.lastIndexOf(10, lineEnd - 1) : -1;
        if (nl < 0 && pos > 0) break;
        const line = data.subarray(nl + 1, lineEnd);
        stop = nl + 1;
        if (line.length) {
          try {
            events.push(JSON.parse(line.toString('utf8')) as AuditEvent);
          } catch {
            /* a torn or foreign line: skipped */
          }
        }
        if (nl < 0) break;
      }
      tail = data.subarray(0, stop);
      // a record longer than a page may read is skipped rather than read whole
      if (tail.length > MAX_RECORD) tail = Buffer.alloc(0);
      if (pos === 0 && stop === 0) return { events, rest: 0, bytes };
    }
    return { events, rest: pos + tail.length, bytes };
  } finally {
    await file.close();
  }
}
