/**
 * The control store's log, resolved the same way by every reader: a sequence of writes to two
 * histories — configuration versions and key-set versions — each write naming the head it was
 * based on. A write is accepted when its history's head is still that one (it then becomes head +
 * 1); otherwise it lost a race and is ignored. The log's order is the topic's (one partition), so
 * every process that reads it agrees on every version and on the heads: history never forks.
 */
export type History = 'config' | 'keyset';

export interface ControlWrite {
  /** format of the entry */
  v: 1;
  history: History;
  /** the head this write was based on: it becomes basedOn + 1 when accepted */
  basedOn: number;
  /** who wrote it: a random id per process and write */
  writer: string;
  at: string;
  /** config: the configuration text; keyset: the key-set document (wrapped keys only) */
  body: string;
  /** config: who published, from where, the note */
  meta?: { by: string; source: 'file' | 'portal' | 'cli'; note: string };
  /** config: its MAC under the key set's control key (control-auth.ts); readers run only versions that verify */
  auth?: { key: number; mac: string };
}

export interface Accepted {
  history: History;
  number: number;
  write: ControlWrite;
}

/** The topic record key of a write: unique per write, so compaction never drops an accepted one. */
export function recordKey(w: ControlWrite): string {
  return `${w.history}/${w.basedOn + 1}/${w.writer}`;
}

/** Parses a record value; undefined for anything that is not a control write (it is ignored). */
export function parseWrite(value: Buffer | string | null): ControlWrite | undefined {
  if (value === null) return undefined;
  let w: unknown;
  try {
    w = JSON.parse(value.toString());
  } catch {
    return undefined;
  }
  const c = w as Partial<ControlWrite>;
  if (c.v !== 1 || (c.history !== 'config' && c.history !== 'keyset')) return undefined;
  if (!Number.isSafeInteger(c.basedOn) || (c.basedOn as number) < 0 || typeof c.writer !== 'string' || typeof c.at !== 'string' || typeof c.body !== 'string')
    return undefined;
  return c as ControlWrite;
}

/** The resolved state: the heads, every accepted write, and which write keys were accepted. */
export class ControlState {
  private readonly heads = { config: 0, keyset: 0 };
  private readonly accepted = new Map<string, Accepted>();
  readonly configs: Accepted[] = [];
  keyset: Accepted | undefined;

  head(history: History): number {
    return this.heads[history];
  }

  /** Applies the next write of the log: the accepted entry, or undefined when it lost its race. */
  apply(w: ControlWrite): Accepted | undefined {
    if (w.basedOn !== this.heads[w.history]) return undefined;
    const entry = { history: w.history, number: w.basedOn + 1, write: w };
    this.heads[w.history] = entry.number;
    this.accepted.set(recordKey(w), entry);
    if (w.history === 'config') this.configs.push(entry);
    else this.keyset = entry;
    return entry;
  }

  /** Whether the write with this record key was accepted (so far). */
  wasAccepted(key: string): Accepted | undefined {
    return this.accepted.get(key);
  }
}
