/**
 * The process environment as veil reads it: every setting that comes from an environment variable
 * is read through this type, handed down from the wiring (src/app, src/cli), so tests and
 * embedders pass their own and nothing below the wiring reads `process.env`.
 */
export type Env = Readonly<Record<string, string | undefined>>;

export { EXAMPLE_CONFIG, resolveConfigPath, resolveDataDir } from './paths.ts';
