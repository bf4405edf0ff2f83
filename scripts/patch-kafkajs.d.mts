/** Types of scripts/patch-kafkajs.mjs, for the tests that import it. */
export interface PatchHunk {
  oldStart: number;
  oldCount: number;
  newStart: number;
  newCount: number;
  lines: string[];
}
export interface PatchedFile {
  path: string;
  created: boolean;
  hunks: PatchHunk[];
}
export function parsePatch(text: string, name?: string): PatchedFile[];
export function applyHunks(content: string, hunks: PatchHunk[], reverse?: boolean): string;
export function patchKafkajs(dir?: string, mode?: 'apply'): { changed: string[] };
export function patchKafkajs(dir: string | undefined, mode: 'revert'): { changed: string[] };
export function patchKafkajs(
  dir: string | undefined,
  mode: 'check',
): { patched: boolean; files: { path: string; state: 'upstream' | 'patched' | 'unknown' }[] };
