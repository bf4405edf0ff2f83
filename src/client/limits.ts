/**
 * The service's call-size limits (configuration `service.limits`), which the client splits at.
 * These are the service's defaults (src/http/service-config.ts); a service configured otherwise
 * is matched with the client's `limits` option. test/client/limits.test.ts keeps them equal.
 */
export interface ClientLimits {
  /** bytes of a /transform body */
  bodyBytes: number;
  /** request elements per call */
  requests: number;
  /** instances per call, over all its requests */
  instancesPerCall: number;
}

export const DEFAULT_CLIENT_LIMITS: Readonly<ClientLimits> = Object.freeze({
  bodyBytes: 4 * 1024 * 1024,
  requests: 100,
  instancesPerCall: 10_000,
});

export function clientLimits(overrides: Partial<ClientLimits> = {}): ClientLimits {
  const limits = { ...DEFAULT_CLIENT_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isInteger(value) || value < 1) throw new RangeError(`limits.${name} must be a positive integer`);
  }
  return limits;
}
