import { describe, expect, it } from 'vitest';
import { DEFAULT_CLIENT_LIMITS } from '../../src/client/index.ts';
import { clientLimits } from '../../src/client/limits.ts';
import { serviceSchema } from '../../src/http/service-config.ts';

describe('client limits', () => {
  it("are the service's defaults (src/http/service-config.ts), so a default client splits where a default service refuses", () => {
    const { bodyBytes, requests, instancesPerCall } = serviceSchema.parse({}).limits;
    expect(DEFAULT_CLIENT_LIMITS).toEqual({ bodyBytes, requests, instancesPerCall });
  });

  it('can be overridden, and refuse nonsense', () => {
    expect(clientLimits({ requests: 5 })).toEqual({ ...DEFAULT_CLIENT_LIMITS, requests: 5 });
    expect(() => clientLimits({ instancesPerCall: 0 })).toThrow(RangeError);
    expect(() => clientLimits({ bodyBytes: 1.5 })).toThrow(RangeError);
  });
});
