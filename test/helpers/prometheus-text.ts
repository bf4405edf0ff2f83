/**
 * A parse of the Prometheus text exposition format (0.0.4, what prom-client serves) into metric
 * families: `# HELP` and `# TYPE` lines, then samples, each of which must belong to a declared
 * family (a histogram's `_bucket`, `_sum` and `_count`, a summary's `_sum` and `_count`). It throws
 * on what the format does not allow, so a test reading it checks the whole text, not one line.
 */
export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Family {
  name: string;
  type: MetricType;
  help: string | undefined;
  samples: { name: string; labels: Record<string, string>; value: number }[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const TYPES = new Set<string>(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const SUFFIXES: Record<MetricType, string[]> = {
  counter: [''],
  gauge: [''],
  untyped: [''],
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
};

export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const helps = new Map<string, string>();
  /** sample name → its family, for the families declared so far */
  const owners = new Map<string, Family>();
  for (const [i, line] of text.split('\n').entries()) {
    const where = `line ${i + 1}: ${line}`;
    if (line.trim() === '') continue;
    const meta = new RegExp(`^#\\s+(HELP|TYPE)\\s+(${NAME})(?:\\s+(.*))?$`).exec(line);
    if (meta) {
      const [, kind, name, rest = ''] = meta as unknown as [string, 'HELP' | 'TYPE', string, string | undefined];
      if (kind === 'HELP') {
        if (helps.has(name)) throw new Error(`a second HELP for ${name} (${where})`);
        helps.set(name, rest);
        const family = families.get(name);
        if (family) family.help = rest;
        continue;
      }
      if (!TYPES.has(rest)) throw new Error(`not a metric type (${where})`);
      if (families.has(name)) throw new Error(`a second TYPE for ${name} (${where})`);
      const family: Family = { name, type: rest as MetricType, help: helps.get(name), samples: [] };
      families.set(name, family);
      for (const suffix of SUFFIXES[family.type]) {
        if (owners.has(name + suffix)) throw new Error(`${name + suffix} belongs to two families (${where})`);
        owners.set(name + suffix, family);
      }
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = new RegExp(`^(${NAME})(?:\\{(.*)\\})?\\s+(\\S+)(?:\\s+-?\\d+)?$`).exec(line);
    if (!sample) throw new Error(`not a sample (${where})`);
    const family = owners.get(sample[1]!);
    if (!family) throw new Error(`a sample of no declared family (${where})`);
    family.samples.push({ name: sample[1]!, labels: labelsOf(sample[2] ?? '', where), value: valueOf(sample[3]!, where) });
  }
  return families;
}

/** A float as Prometheus reads one (Go's ParseFloat): NaN and Inf in any case, as prom-client writes `Nan`. */
function valueOf(text: string, where: string): number {
  const special = /^([+-]?)(inf|infinity|nan)$/i.exec(text);
  if (special) return special[2]!.toLowerCase() === 'nan' ? NaN : special[1] === '-' ? -Infinity : Infinity;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) throw new Error(`not a sample value (${where})`);
  return Number(text);
}

function labelsOf(text: string, where: string): Record<string, string> {
  const labels: Record<string, string> = {};
  const pair = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;
  while (pair.lastIndex < text.length) {
    const m = pair.exec(text);
    if (!m) throw new Error(`malformed labels (${where})`);
    if (m[1]! in labels) throw new Error(`label ${m[1]} twice (${where})`);
    labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}
