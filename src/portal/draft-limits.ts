import { parse } from 'yaml';
import { pointerOf, type ErrorDetail } from '../engine/index.ts';
import { PortalError } from './errors.ts';

/**
 * What a draft may make the serving process do. A draft is written by an editor and is not live,
 * yet every view of it compiles it, runs its saved test cases and diffs it, so its size is bounded
 * here; the work itself runs in the sandbox thread under a time limit (sandbox-runner.ts).
 * Sequences have at most 16 steps (the configuration schema's own bound).
 */
export const DRAFT_LIMITS = {
  /** bytes of the draft's YAML */
  bytes: 256 * 1024,
  /** a pinned key version (sandbox keys are derived lazily, so this bounds the number, not work) */
  keyVersion: 10_000,
  /** saved test cases per draft */
  tests: 100,
  /** characters of a saved test case's or the tester's value */
  valueLength: 1024,
  /** values in one tester run */
  testerValues: 64,
} as const;

/** Every limit the draft text exceeds, as error details (pointer into the configuration). */
export function draftLimitDetails(text: string): ErrorDetail[] {
  const bytes = Buffer.byteLength(text);
  if (bytes > DRAFT_LIMITS.bytes)
    return [{ code: 'DRAFT_LIMIT_EXCEEDED', pointer: '', message: `the draft has ${bytes} bytes; at most ${DRAFT_LIMITS.bytes}` }];
  let doc: unknown;
  try {
    doc = parse(text);
  } catch {
    return []; // not YAML: validation reports it
  }
  const keys = (doc as { keys?: unknown } | null)?.keys;
  if (!keys || typeof keys !== 'object') return [];
  return Object.entries(keys as Record<string, unknown>).flatMap(([name, ref]) => {
    const version = (ref as { version?: unknown } | null)?.version;
    return typeof version === 'number' && version > DRAFT_LIMITS.keyVersion
      ? [
          {
            code: 'DRAFT_LIMIT_EXCEEDED' as const,
            pointer: pointerOf(['keys', name, 'version']),
            message: `key version ${version} is above the portal's limit of ${DRAFT_LIMITS.keyVersion}`,
          },
        ]
      : [];
  });
}

/** Refuses (422 DRAFT_LIMIT_EXCEEDED) a draft text over the limits: nothing is saved. */
export function requireWithinLimits(text: string): void {
  const details = draftLimitDetails(text);
  if (details.length) throw new PortalError('DRAFT_LIMIT_EXCEEDED', details.map((d) => `${d.pointer || '/'}: ${d.message}`).join('; '), { details });
}
