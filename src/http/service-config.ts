import { isIP } from 'node:net';
import { z } from 'zod';

/** An IPv4 or IPv6 address, optionally with a prefix length (`10.0.0.0/8`, `::1`). */
const addressOrCidr = z.string().refine((s) => {
  const [ip, bits, ...rest] = s.split('/');
  const family = isIP(ip ?? '');
  if (!family || rest.length) return false;
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
}, 'must be an IP address or CIDR block');

/** The configuration's `service` section: limits and rate limits of the HTTP service, its listener and audit log. */
export const serviceSchema = z.strictObject({
  limits: z
    .strictObject({
      bodyBytes: z
        .number()
        .int()
        .min(1024)
        .max(64 * 1024 * 1024)
        .default(4 * 1024 * 1024),
      requests: z.number().int().min(1).max(10_000).default(100),
      instancesPerCall: z.number().int().min(1).max(1_000_000).default(10_000),
      valueLength: z.number().int().min(1).max(1_048_576).default(4096),
      /** a request body must arrive within this long of its headers, else 408 REQUEST_TIMEOUT */
      bodyReadTimeoutMs: z.number().int().min(100).max(600_000).default(30_000),
    })
    .prefault({}),
  rateLimit: z
    .strictObject({
      /** sustained /transform calls per second per client, and the burst above it */
      transformPerSecond: z.number().min(0.1).default(500),
      transformBurst: z.number().int().min(1).default(1000),
      /** failed token requests per minute per client id and per address before 429 */
      tokenFailuresPerMinute: z.number().int().min(1).default(10),
    })
    .prefault({}),
  /**
   * Peers (addresses or CIDR blocks) whose X-Forwarded-For / -Proto / -Host veil believes: a TLS
   * terminator or load balancer in front. From any other peer those headers are ignored.
   */
  trustProxy: z.array(addressOrCidr).min(1).max(64).optional(),
  /** serve HTTPS (PEM files, read at start) instead of HTTP */
  tls: z.strictObject({ certFile: z.string().min(1), keyFile: z.string().min(1) }).optional(),
  /** the audit log (`<data dir>/audit.log`) rotates at `rotateBytes`, keeping `keepFiles` older files */
  audit: z
    .strictObject({
      rotateBytes: z
        .number()
        .int()
        .min(4096)
        .max(1024 * 1024 * 1024)
        .default(64 * 1024 * 1024),
      keepFiles: z.number().int().min(1).max(100).default(8),
    })
    .prefault({}),
});

export type ServiceConfig = z.infer<typeof serviceSchema>;
