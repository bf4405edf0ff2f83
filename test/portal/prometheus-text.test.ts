import { describe, expect, it } from 'vitest';
import { PortalFault } from '../../src/portal/errors.ts';
import { parsePrometheusText, sumOf } from '../../src/portal/prometheus-text.ts';

describe('Prometheus text parsing', () => {
  it('reads samples with labels, escapes, special values and timestamps; skips comments and blank lines', () => {
    const text = [
      '# HELP veil_stream_records_in_total Records read from raw topics',
      '# TYPE veil_stream_records_in_total counter',
      'veil_stream_records_in_total{pipeline="customers"} 42',
      'veil_stream_records_in_total{pipeline="orders",} 7 1712345678000',
      '',
      'odd{a="quote \\" backslash \\\\ newline \\n end", b = "x"} 1.5e3',
      'up 1',
      'temp{x="y"} -Inf',
      'nan_metric NaN',
      'prom_client_style Nan',
    ].join('\n');
    const samples = parsePrometheusText(text);
    expect(samples).toEqual([
      { name: 'veil_stream_records_in_total', labels: { pipeline: 'customers' }, value: 42 },
      { name: 'veil_stream_records_in_total', labels: { pipeline: 'orders' }, value: 7 },
      { name: 'odd', labels: { a: 'quote " backslash \\ newline \n end', b: 'x' }, value: 1500 },
      { name: 'up', labels: {}, value: 1 },
      { name: 'temp', labels: { x: 'y' }, value: -Infinity },
      { name: 'nan_metric', labels: {}, value: NaN },
      { name: 'prom_client_style', labels: {}, value: NaN },
    ]);
  });

  it('a label value holding "}" or spaces does not end the labels', () => {
    expect(parsePrometheusText('m{path="/a b}c"} 3')).toEqual([{ name: 'm', labels: { path: '/a b}c' }, value: 3 }]);
  });

  it.each([
    ['<html><body>Not Found</body></html>'],
    ['metric{pipeline="x" 1'],
    ['metric{pipeline=x} 1'],
    ['metric{pipeline="x\\q"} 1'],
    ['metric twelve'],
    ['metric 1 2 3'],
    ['metric'],
  ])('refuses a body that is not Prometheus text: %s', (text) => {
    expect(() => parsePrometheusText(text)).toThrow(PortalFault);
    expect(() => parsePrometheusText(text)).toThrow(/^line 1 is not a Prometheus sample$/);
  });

  it('sums a metric over the samples whose labels match, ignoring others and non-finite values', () => {
    const samples = parsePrometheusText(
      [
        'lag{pipeline="a",partition="0"} 3',
        'lag{pipeline="a",partition="1"} 4',
        'lag{pipeline="b",partition="0"} 100',
        'lag{pipeline="a",partition="2"} NaN',
        'other{pipeline="a"} 9',
      ].join('\n'),
    );
    expect(sumOf(samples, 'lag', { pipeline: 'a' })).toBe(7);
    expect(sumOf(samples, 'lag', { pipeline: 'c' })).toBeUndefined();
  });
});
