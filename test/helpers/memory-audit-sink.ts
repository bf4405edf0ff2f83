import type { AuditEvent, AuditPage, AuditSink } from '../../src/audit/index.ts';

/** An audit sink that keeps events in memory, for tests (the service writes FileAuditSink); `failing` makes it refuse to record, as a sink that is down. */
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

  async page(options: { limit: number; cursor?: string }): Promise<AuditPage> {
    const end = options.cursor !== undefined && /^\d+$/.test(options.cursor) ? Math.min(Number(options.cursor), this.events.length) : this.events.length;
    const start = Math.max(0, end - options.limit);
    return { events: this.events.slice(start, end).reverse(), ...(start > 0 ? { next: String(start) } : {}) };
  }

  async close(): Promise<void> {}
}
