import { html, idOf, type Html } from '../html.ts';

const WIDTH = 120;
const HEIGHT = 28;
const PAD = 2;

/** A number as the page shows it: integers as they are, others with up to 2 decimals. */
export function formatNumber(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  return Number.isInteger(value) ? String(value) : value.toFixed(2).replace(/\.?0+$/, '');
}

/**
 * A small line chart as inline SVG, drawn on the server (the CSP allows no script, and SVG
 * attributes are not inline style). `null` is a gap (the processors were unreachable). The chart
 * is an image with a `<title>` and a `<desc>` giving the range and latest value as text; every
 * text is escaped by the html tag, every coordinate is a number veil computed.
 */
export function sparkline(label: string, values: readonly (number | null)[], unit: string): Html {
  const id = idOf('spark', `${label}\n${unit}`);
  const known = values.filter((v): v is number => v !== null && Number.isFinite(v));
  const max = Math.max(1, ...known);
  const min = Math.min(0, ...known);
  const step = values.length > 1 ? (WIDTH - 2 * PAD) / (values.length - 1) : 0;
  const y = (v: number) => HEIGHT - PAD - ((v - min) / (max - min)) * (HEIGHT - 2 * PAD);
  const lines: string[][] = [];
  let current: string[] = [];
  values.forEach((v, i) => {
    if (v === null || !Number.isFinite(v)) {
      if (current.length) lines.push(current);
      current = [];
      return;
    }
    current.push(`${(PAD + i * step).toFixed(1)},${y(v).toFixed(1)}`);
  });
  if (current.length) lines.push(current);
  const latest = values.length ? values[values.length - 1] : null;
  const desc = known.length
    ? `${values.length} samples, ${known.length} with data: min ${formatNumber(Math.min(...known))}, max ${formatNumber(Math.max(...known))}, latest ${formatNumber(latest)} ${unit}`
    : 'no data yet';
  const marks = lines.map((points) => {
    if (points.length > 1) return html`<polyline class="spark-line" fill="none" points="${points.join(' ')}"/>`;
    const [cx, cy] = points[0]!.split(',');
    return html`<circle class="spark-dot" cx="${cx}" cy="${cy}" r="1.5"/>`;
  });
  return html`<svg class="spark" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-labelledby="${id}-t ${id}-d"><title id="${id}-t">${label}</title><desc id="${id}-d">${desc}</desc><line class="spark-axis" x1="${PAD}" y1="${HEIGHT - PAD}" x2="${WIDTH - PAD}" y2="${HEIGHT - PAD}"/>${marks}</svg>`;
}
