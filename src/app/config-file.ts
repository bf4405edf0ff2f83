import { readFile } from 'node:fs/promises';
import { compileConfigText } from '../engine/config/compile.ts';
import type { CompiledConfig } from '../engine/config/compiled.ts';
import type { ConfigIssue } from '../engine/config/issues.ts';
import { VeilError } from '../engine/errors.ts';
import { formatIssue } from '../engine/config/issues.ts';

export interface LoadedConfig {
  file: string;
  config?: CompiledConfig;
  issues: ConfigIssue[];
}

/** Reads and compiles a configuration file; unreadable files become an issue, not a throw. */
export async function loadConfigFile(file: string): Promise<LoadedConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    const reason = (e as NodeJS.ErrnoException).code ?? 'unreadable';
    return { file, issues: [{ severity: 'error', pointer: '', message: `cannot read the file (${reason})` }] };
  }
  return { file, ...compileConfigText(text) };
}

/** Loads a configuration that must be valid: CONFIG_INVALID lists every problem. */
export async function requireConfig(file: string): Promise<{ config: CompiledConfig; warnings: ConfigIssue[] }> {
  const loaded = await loadConfigFile(file);
  const errors = loaded.issues.filter((i) => i.severity === 'error');
  if (!loaded.config || errors.length) {
    throw new VeilError('CONFIG_INVALID', `configuration ${file} is invalid:\n${errors.map((i) => formatIssue(file, i)).join('\n')}`);
  }
  return { config: loaded.config, warnings: loaded.issues.filter((i) => i.severity === 'warning') };
}
