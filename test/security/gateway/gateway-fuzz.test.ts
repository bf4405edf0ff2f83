// The short form of the gateway framing fuzzer (test/security/gateway/gateway-fuzz.ts; the long form is
// `npm run fuzz:gateway`): ~25 s of mutated requests against real processes, no finding allowed.
import { describe, expect, it } from 'vitest';
import { runFuzz } from './gateway-fuzz.ts';

describe('veil gateway: framing fuzzer (short form)', () => {
  it('finds nothing: every request the upstream parsed was routed by the gateway as that request, no selected value in clear', async () => {
    const report = await runFuzz({ seconds: Number(process.env.VEIL_GATEWAY_FUZZ_SECONDS ?? 25), log: (line) => console.log(line) });
    console.log(
      `gateway fuzz (seed ${report.seed}): ${report.cases} cases, ${report.requests} requests sent, ${report.upstreamParsed} parsed upstream (${report.unanswered} on connections that ended before their answers), statuses ${JSON.stringify(report.statuses)}`,
    );
    expect(report.findings).toEqual([]);
    // the run did exercise both sides: requests refused and requests forwarded
    expect(report.cases).toBeGreaterThan(100);
    expect(report.upstreamParsed).toBeGreaterThan(10);
    expect(report.statuses['400']).toBeGreaterThan(10);
  }, 120_000);
});
