import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { patchKafkajs } from '../../scripts/patch-kafkajs.mjs';

/** The installed kafkajs package's directory (patched or not). */
export const INSTALLED_KAFKAJS = dirname(createRequire(import.meta.url).resolve('kafkajs/package.json'));

/**
 * Two private copies of the installed kafkajs, made from the repository's patches whatever state
 * node_modules is in: `upstream` (the patches reverted: the registry's 2.2.4) and `patched` (then
 * applied again). `load` requires a module of a copy by its path inside the package.
 */
export function kafkajsCopies(): { upstream: string; patched: string; load(copy: string, path: string): unknown; remove(): void } {
  const root = mkdtempSync(join(tmpdir(), 'veil-kafkajs-'));
  const upstream = join(root, 'upstream');
  const patched = join(root, 'patched');
  cpSync(INSTALLED_KAFKAJS, upstream, { recursive: true });
  patchKafkajs(upstream, 'revert');
  cpSync(upstream, patched, { recursive: true });
  patchKafkajs(patched);
  return {
    upstream,
    patched,
    load: (copy, path) => createRequire(join(copy, 'package.json'))(join(copy, path)),
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}
