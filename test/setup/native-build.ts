import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/**
 * vitest global setup: builds the native core (scripts/build-native.sh: cargo, incremental — a
 * fraction of a second when native/ has not changed, about a minute the first time), so that
 * test/native and bench:native's short form run against the crate as it is in the tree.
 */
export default async function setup(): Promise<void> {
  await promisify(execFile)('sh', [new URL('../../scripts/build-native.sh', import.meta.url).pathname], { timeout: 600_000 });
}
