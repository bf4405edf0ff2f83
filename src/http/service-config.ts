import { z } from 'zod';

/** The configuration's `service` section: limits and rate limits of the HTTP service. */
export const serviceSchema = z.strictObject({
  limits: z.strictObject({
    bodyBytes: z.number().int().min(1024).max(64 * 1024 * 1024).default(4 * 1024 * 1024),
    requests: z.number().int().min(1).max(10_000).default(100),
    instancesPerCall: z.number().int().min(1).max(1_000_000).default(10_000),
    valueLength: z.number().int().min(1).max(1_048_576).default(4096),
    /** a request body must arrive within this long of its headers, else 408 REQUEST_TIMEOUT */
    bodyReadTimeoutMs: z.number().int().min(100).max(600_000).default(30_000),
  }).prefault({}),
  rateLimit: z.strictObject({
    /** sustained /transform calls per second per client, and the burst above it */
    transformPerSecond: z.number().min(0.1).default(500),
    transformBurst: z.number().int().min(1).default(1000),
    /** failed token requests per minute per client id and per address before 429 */
    tokenFailuresPerMinute: z.number().int().min(1).default(10),
  }).prefault({}),
});

export type ServiceConfig = z.infer<typeof serviceSchema>;
