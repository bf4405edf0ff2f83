import { describe, expect, it } from 'vitest';
import { formatNumber, sparkline } from '../../src/portal/views/sparkline.ts';

const pointsOf = (svg: string) => [...svg.matchAll(/points="([^"]*)"/g)].map((m) => m[1]!.split(' ').map((p) => p.split(',').map(Number)));

describe('sparkline (server-side SVG)', () => {
  it('is an image with an escaped title and a text description of the range and latest value', () => {
    const svg = sparkline('<script>alert(1)</script> "x" & y', [1, 2, 3], 'records/s').text;
    expect(svg).toMatch(/^<svg [^>]*role="img"/);
    expect(svg).not.toContain('<script>');
    expect(svg).toContain('<title id="spark-');
    expect(svg).toContain('&lt;script&gt;alert(1)&lt;/script&gt; &quot;x&quot; &amp; y</title>');
    expect(svg).toContain('<desc id="spark-');
    expect(svg).toContain('3 samples, 3 with data: min 1, max 3, latest 3 records/s');
    // labelled by its own title and desc
    const id = /<title id="([^"]+)"/.exec(svg)![1]!;
    expect(svg).toContain(`aria-labelledby="${id} ${id.replace(/-t$/, '-d')}"`);
    expect(svg).not.toMatch(/style=|<script|on[a-z]+=/i);
  });

  it('draws every point inside the view box, higher values higher up', () => {
    const svg = sparkline('a', [0, 5, 10, 2.5], 'records').text;
    const [line] = pointsOf(svg);
    expect(line).toHaveLength(4);
    for (const [x, y] of line!) {
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThanOrEqual(120);
      expect(y).toBeGreaterThanOrEqual(0);
      expect(y).toBeLessThanOrEqual(28);
    }
    expect(line![2]![1]).toBeLessThan(line![1]![1]!);
    expect(line![1]![1]).toBeLessThan(line![0]![1]!);
  });

  it('leaves a gap where processors were unreachable, and says so when there is no data', () => {
    const svg = sparkline('a', [1, 2, null, 3, 4], 'records/s').text;
    expect(pointsOf(svg).map((l) => l.length)).toEqual([2, 2]);
    const lone = sparkline('a', [null, 7, null], 'records/s').text;
    expect(lone).toContain('<circle class="spark-dot"');
    const empty = sparkline('a', [null, null], 'records/s').text;
    expect(pointsOf(empty)).toEqual([]);
    expect(empty).toContain('<desc id="spark-');
    expect(empty).toContain('no data yet</desc>');
  });

  it('formats numbers for the text beside the chart', () => {
    expect([formatNumber(3), formatNumber(2.5), formatNumber(1 / 3), formatNumber(null), formatNumber(NaN)]).toEqual(['3', '2.5', '0.33', '–', '–']);
  });
});
