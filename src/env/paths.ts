import type { Env } from './index.ts';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The configuration shipped with veil: the embedded default. */
export const EXAMPLE_CONFIG = fileURLToPath(new URL('../../config/example.yaml', import.meta.url));

/** --data-dir, else $VEIL_DATA_DIR, else ./.veil */
export function resolveDataDir(given: string | undefined, env: Env, cwd: string): string {
  const dir = given ?? env.VEIL_DATA_DIR;
  if (dir === undefined || dir === '') return join(cwd, '.veil');
  return isAbsolute(dir) ? dir : resolve(cwd, dir);
}

/** --config, else $VEIL_CONFIG, else the shipped example configuration */
export function resolveConfigPath(given: string | undefined, env: Env, cwd: string): string {
  const file = given ?? env.VEIL_CONFIG;
  if (file === undefined || file === '') return EXAMPLE_CONFIG;
  return isAbsolute(file) ? file : resolve(cwd, file);
}
