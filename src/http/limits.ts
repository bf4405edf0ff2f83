import { VeilError, type ErrorDetail } from '../engine/index.ts';
import type { ServiceConfig } from './service-config.ts';

/**
 * Call-size limits checked before the engine runs (body size is Fastify's bodyLimit): number of
 * requests, instances in the call, and the length of each value. Shape problems are left to the
 * engine, which reports them with pointers.
 */
export function checkLimits(body: unknown, limits: ServiceConfig['limits']): void {
  const requests = (body as { requests?: unknown })?.requests;
  if (!Array.isArray(requests)) return;
  if (requests.length > limits.requests) {
    throw new VeilError('LIMIT_EXCEEDED', `the call holds ${requests.length} requests; the limit is ${limits.requests}`, [
      { code: 'LIMIT_EXCEEDED', pointer: '/requests', message: `at most ${limits.requests} requests per call` },
    ]);
  }
  let total = 0;
  const tooLong: ErrorDetail[] = [];
  requests.forEach((r, ri) => {
    const instances = (r as { instances?: unknown })?.instances;
    if (!Array.isArray(instances)) return;
    total += instances.length;
    instances.forEach((inst, ii) => {
      const value = (inst as { value?: unknown })?.value;
      if (typeof value === 'string' && value.length > limits.valueLength && tooLong.length < 100) {
        tooLong.push({ code: 'VALUE_TOO_LONG', pointer: `/requests/${ri}/instances/${ii}/value`, instance: ii, message: `value longer than ${limits.valueLength} characters` });
      }
    });
  });
  if (total > limits.instancesPerCall) {
    throw new VeilError('LIMIT_EXCEEDED', `the call holds ${total} instances; the limit is ${limits.instancesPerCall}`, [
      { code: 'LIMIT_EXCEEDED', pointer: '/requests', message: `at most ${limits.instancesPerCall} instances per call` },
    ]);
  }
  if (tooLong.length) throw new VeilError('VALUE_TOO_LONG', `${tooLong.length} value(s) longer than the limit of ${limits.valueLength} characters`, tooLong);
}
