import { PortalFault } from './errors.ts';

/** One sample line of the Prometheus text exposition format. */
export interface PromSample {
  name: string;
  labels: Readonly<Record<string, string>>;
  value: number;
}

/** A line that is neither a comment nor a sample: the body is not Prometheus text (PortalFault NOT_PROMETHEUS_TEXT). */
function notSample(line: number): PortalFault {
  return new PortalFault('NOT_PROMETHEUS_TEXT', `line ${line} is not a Prometheus sample`);
}

const NAME = /^[A-Za-z_:][A-Za-z0-9_:]*/;
const LABEL_NAME = /^[A-Za-z_][A-Za-z0-9_]*/;
const UNESCAPE: Record<string, string> = { '\\': '\\', '"': '"', n: '\n' };

/** A sample value, or undefined; NaN and Inf in any case (prom-client writes `Nan`). */
function number(text: string): number | undefined {
  const lower = text.toLowerCase();
  if (lower === '+inf' || lower === 'inf') return Infinity;
  if (lower === '-inf') return -Infinity;
  if (lower === 'nan') return NaN;
  const value = /^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$/.test(text) ? Number(text) : Number.NaN;
  return Number.isNaN(value) ? undefined : value;
}

/** `{a="x",b="y\"z"}` from `at` (just after the name): the labels and where the rest starts. */
function labelsAt(line: string, at: number): { labels: Record<string, string>; next: number } | undefined {
  const labels: Record<string, string> = {};
  let i = at + 1;
  for (;;) {
    while (line[i] === ' ' || line[i] === ',') i++;
    if (line[i] === '}') return { labels, next: i + 1 };
    const name = LABEL_NAME.exec(line.slice(i))?.[0];
    if (!name) return undefined;
    i += name.length;
    while (line[i] === ' ') i++;
    if (line[i] !== '=') return undefined;
    i++;
    while (line[i] === ' ') i++;
    if (line[i] !== '"') return undefined;
    i++;
    let value = '';
    while (i < line.length && line[i] !== '"') {
      if (line[i] === '\\') {
        const esc = UNESCAPE[line[i + 1] ?? ''];
        if (esc === undefined) return undefined;
        value += esc;
        i += 2;
      } else {
        value += line[i++];
      }
    }
    if (line[i] !== '"') return undefined;
    labels[name] = value;
    i++;
  }
}

/**
 * Parses the Prometheus text exposition format (version 0.0.4, what prom-client writes): every
 * sample with its labels and value; comments (HELP, TYPE) and blank lines are skipped, an optional
 * timestamp is ignored. Any other line makes the whole body unreadable (PortalFault NOT_PROMETHEUS_TEXT).
 */
export function parsePrometheusText(text: string): PromSample[] {
  const samples: PromSample[] = [];
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const name = NAME.exec(line)?.[0];
    if (!name) throw notSample(index + 1);
    let labels: Record<string, string> = {};
    let rest = line.slice(name.length);
    if (rest.startsWith('{')) {
      const parsed = labelsAt(line, name.length);
      if (!parsed) throw notSample(index + 1);
      labels = parsed.labels;
      rest = line.slice(parsed.next);
    }
    const [valueText, timestamp, extra] = rest.trim().split(/\s+/);
    const value = number(valueText ?? '');
    if (value === undefined) throw notSample(index + 1);
    if (extra !== undefined || (timestamp !== undefined && !/^-?\d+$/.test(timestamp))) throw notSample(index + 1);
    samples.push({ name, labels, value });
  });
  return samples;
}

/** The sum of a metric's samples whose labels include `match` (e.g. every partition of one pipeline); undefined when there is none. */
export function sumOf(samples: readonly PromSample[], name: string, match: Readonly<Record<string, string>>): number | undefined {
  let sum: number | undefined;
  for (const s of samples) {
    if (s.name !== name || !Number.isFinite(s.value)) continue;
    if (Object.entries(match).every(([k, v]) => s.labels[k] === v)) sum = (sum ?? 0) + s.value;
  }
  return sum;
}
