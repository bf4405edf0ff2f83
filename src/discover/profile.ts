import { detect, isEmail, isPhone, KINDS, normaliseName, type Kind } from './detectors.ts';

/** One field found to hold personal data: its path, kind and counts — never a value. */
export interface Finding {
  /** the field's path in a pipeline's terms: `email`, `customer.email`, `cards[].number` */
  path: string;
  kind: Kind;
  /** sampled values of the field (strings, and integers as their digits) */
  values: number;
  /** of those, how many the kind's validator accepted */
  matched: number;
  share: number;
  /** high: the value alone proves it (checksums, registries, syntax); medium: the field's name was needed */
  confidence: 'high' | 'medium';
}

/** where a record key's finding is reported */
export const KEY_PATH = '(key)';

/** the kinds a value alone does not tell: the field's name decides */
const BY_NAME: ReadonlySet<Kind> = new Set(['person-name', 'date-of-birth']);

interface FieldStats {
  name: string;
  parent: string;
  values: number;
  matched: Map<Kind, number>;
}

/**
 * Counts, per field path of sampled records (JSON values), how many values each detector
 * accepts. Holds counts only: a sampled value is looked at once and not kept.
 */
export class Profiler {
  private readonly fields = new Map<string, FieldStats>();
  records = 0;

  /** One sampled record; a Kafka record's key, if any, is profiled as the path `(key)`. */
  add(record: unknown, key?: string | null): void {
    this.records++;
    this.walk(record, '', '');
    if (typeof key === 'string') this.walk(key, KEY_PATH, 'key');
  }

  /** The fields whose values are mostly (≥ minShare) of one kind, the best-matching kind each, by path. */
  findings(minShare = 0.8): Finding[] {
    const out: Finding[] = [];
    for (const [path, stats] of this.fields) {
      let best: [Kind, number] | undefined;
      for (const [kind, n] of stats.matched) if (!best || n > best[1]) best = [kind, n];
      if (!best || stats.values === 0) continue;
      const share = best[1] / stats.values;
      if (share < minShare) continue;
      out.push({ path, kind: best[0], values: stats.values, matched: best[1], share, confidence: BY_NAME.has(best[0]) ? 'medium' : 'high' });
    }
    return out.sort((a, b) => a.path.localeCompare(b.path));
  }

  private walk(value: unknown, path: string, name: string, personalNeighbours = false, parent = ''): void {
    if (Array.isArray(value)) {
      for (const item of value) this.walk(item, `${path}[]`, name, false, parent);
      return;
    }
    // bytes (Avro `bytes` and `fixed`) hold no text to validate
    if (value instanceof Uint8Array) return;
    if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      // neighbours: an email or phone beside a generic `name` makes it a person's
      const personal = entries.some(([key, v]) => typeof v === 'string' && (isEmail(v) || isPhone(v, { name: normaliseName(key) })));
      for (const [key, child] of entries) {
        const segment = pathSegment(key);
        this.walk(child, path ? `${path}.${segment}` : segment, segment === MASKED ? '' : key, personal, name);
      }
      return;
    }
    const text = typeof value === 'string' ? value : typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? String(value) : undefined;
    if (text === undefined || path === '') return;
    let stats = this.fields.get(path);
    if (!stats) this.fields.set(path, (stats = { name: normaliseName(name), parent: normaliseName(parent), values: 0, matched: new Map() }));
    stats.values++;
    const context = { name: stats.name, personalNeighbours, parent: stats.parent };
    for (const kind of KINDS) if (detect(kind, text, context)) stats.matched.set(kind, (stats.matched.get(kind) ?? 0) + 1);
  }
}

/** What a map key that may itself be data shows as in a path. */
export const MASKED = '*';
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/**
 * A key as a path segment: a field name as it is; anything else — a key that is not a field name
 * (`alice@example.com`, `+44…`, `4111…` as a map's keys) or that a detector accepts — as `*`, so a
 * path never carries a sampled value. A path with `*` is reported, not drafted (no pipeline path
 * can name it).
 */
export function pathSegment(key: string): string {
  return FIELD_NAME.test(key) && !isDataKey(key) ? key : MASKED;
}

const NO_CONTEXT = { name: '', personalNeighbours: false, parent: '' };

/** A key that a detector takes for personal data on its own (no field name): never shown in a path, pointer, log or metric. */
export function isDataKey(key: string): boolean {
  return KINDS.some((kind) => detect(kind, key, NO_CONTEXT));
}
