import { z } from 'zod';

/**
 * The configuration's `portal` section: the admin portal's guards. Takes effect at the next start,
 * like `identity` and `service`.
 */
export const portalSchema = z.strictObject({
  /** a draft cannot be published by an admin who changed its text or its test cases */
  fourEyes: z.boolean().default(false),
  /** sessions one identity (issuer + subject) may hold; signing in once more ends its own oldest */
  sessionsPerIdentity: z.number().int().min(1).max(100).default(5),
  /** sessions of the serving process; beyond, sign-in is refused (503 SESSIONS_FULL), nobody is signed out */
  maxSessions: z.number().int().min(1).max(100_000).default(1000),
  /** failed sign-ins per minute per client id (and ten times as many per source address) before 429 */
  signInFailuresPerMinute: z.number().int().min(1).max(10_000).default(10),
  /** how long the sandbox may work on one draft view, publish or tester run */
  sandboxTimeoutMs: z.number().int().min(100).max(120_000).default(10_000),
  /**
   * Hosts of `pipelines.*.metricsUrls` that may be link-local or cloud-metadata addresses, by the
   * name written in the URL (e.g. `169.254.10.7`); every other such address is refused.
   */
  metricsAllowedHosts: z.array(z.string().min(1).max(253)).max(64).default([]),
});

export type PortalConfig = z.infer<typeof portalSchema>;

export const DEFAULT_PORTAL_CONFIG: PortalConfig = portalSchema.parse({});
