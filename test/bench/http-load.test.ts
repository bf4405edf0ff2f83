import { describe, expect, it } from 'vitest';
import { parseWrk } from '../../bench/http-load.ts';

// wrk 4.1.0's summary with --latency, as bench:http reads it
const summary = (extra = '') => `Running 8s test @ http://127.0.0.1:18123/transform
  1 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    21.30ms    6.10ms  58.20ms   71.00%
    Req/Sec   378.10     20.30   410.00     70.00%
  Latency Distribution
     50%   20.70ms
     75%   24.10ms
     90%   29.80ms
     99%   46.40ms
  3025 requests in 8.01s, 231.50MB read
${extra}Requests/sec:    377.65
Transfer/sec:     28.90MB
`;

describe('bench:http reads wrk', () => {
  it('takes calls, their rate over the elapsed time and p50/p99 in ms', () => {
    const r = parseWrk(summary(), 8);
    expect(r.calls).toBe(3025);
    expect(r.callsPerSecond).toBeCloseTo(3025 / 8.01, 6);
    expect([r.p50Ms, r.p99Ms]).toEqual([20.7, 46.4]);
  });

  it('converts microsecond and second percentiles', () => {
    const r = parseWrk(summary().replace('20.70ms', '812.00us').replace('46.40ms', '1.20s'), 8);
    expect([r.p50Ms, r.p99Ms]).toEqual([0.8, 1200]);
  });

  it('fails the bench on non-2xx answers or socket errors', () => {
    expect(() => parseWrk(summary('  Non-2xx or 3xx responses: 12\n'), 8)).toThrow(/Non-2xx/);
    expect(() => parseWrk(summary('  Socket errors: connect 0, read 3, write 0, timeout 0\n'), 8)).toThrow(/Socket errors/);
    expect(() => parseWrk(summary('  Socket errors: connect 0, read 0, write 0, timeout 0\n'), 8).calls).not.toThrow();
  });

  it('fails when wrk printed no summary', () => {
    expect(() => parseWrk('unable to connect to 127.0.0.1:18123 Connection refused', 8)).toThrow(/no summary/);
  });
});
