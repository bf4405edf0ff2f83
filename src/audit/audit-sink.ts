import { open, readFile, type FileHandle } from 'node:fs/promises';

/** The adapter a call arrived through; a new adapter (portal tester, gateway) adds its name. */
export type AuditChannel = 'http' | 'kafka' | 'portal' | 'gateway';

/** One audited call: who, when, which fields, how many values, outcome. Never a value. */
export interface AuditEvent {
  /** unique per event, chosen by veil */
  eventId: string;
  time: string;
  requestId: string;
  channel: AuditChannel;
  client?: string;
  subject?: string;
  issuer?: string;
  outcome: 'ok' | 'denied' | 'failed';
  code?: string;
  /** values in the call */
  instances: number;
  /** per configured field and action: how many values (empty when refused before planning) */
  fields: { className: string; propertyName: string; action: string; count: number }[];
  /** an administration event of the portal (sign-in, draft saved, published, key rotated): what and on what, never a value */
  admin?: { action: string; target?: string };
}

/** Where audit events go. `record` resolves once the event is durably handed off, or rejects. */
export interface AuditSink {
  record(event: AuditEvent): Promise<void>;
  close(): Promise<void>;
  /** the latest events, newest first (the admin portal's audit page), when the sink can read back */
  recent?(limit: number): Promise<AuditEvent[]>;
}

/** JSON lines appended to a file (mode 0600); each record is written before the call proceeds. */
export class FileAuditSink implements AuditSink {
  private handle: Promise<FileHandle> | undefined;
  private readonly path: string;

  constructor(path: string) {
    this.path = path;
  }

  async record(event: AuditEvent): Promise<void> {
    const opening = (this.handle ??= open(this.path, 'a', 0o600));
    let handle: FileHandle;
    try {
      handle = await opening;
    } catch (e) {
      // a file that cannot be opened now (its directory missing or unwritable) may be later: open again next time
      if (this.handle === opening) this.handle = undefined;
      throw e;
    }
    await handle.write(`${JSON.stringify(event)}\n`);
  }

  async close(): Promise<void> {
    if (this.handle) await (await this.handle).close();
    this.handle = undefined;
  }

  async recent(limit: number): Promise<AuditEvent[]> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    return text.split('\n').filter(Boolean).slice(-limit).reverse().flatMap((line) => {
      try {
        return [JSON.parse(line) as AuditEvent];
      } catch {
        return [];
      }
    });
  }
}

/** Keeps events in memory: tests, and a view for the admin portal later. */
export class MemoryAuditSink implements AuditSink {
  readonly events: AuditEvent[] = [];
  failing = false;

  async record(event: AuditEvent): Promise<void> {
    if (this.failing) throw new Error('audit sink unavailable');
    this.events.push(event);
  }

  async recent(limit: number): Promise<AuditEvent[]> {
    return this.events.slice(-limit).reverse();
  }

  async close(): Promise<void> {}
}
