/** A problem found in a configuration: where (file, JSON pointer, line) and what. */
export interface ConfigIssue {
  severity: 'error' | 'warning';
  /** JSON pointer inside the file, e.g. /sequences/pan/steps/0/key */
  pointer: string;
  message: string;
  line?: number;
}

export function pointerOf(path: readonly PropertyKey[]): string {
  return path.length === 0 ? '' : '/' + path.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1')).join('/');
}

export function formatIssue(file: string, issue: ConfigIssue): string {
  const where = issue.line !== undefined ? `${file}:${issue.line}` : file;
  return `${where}: ${issue.severity}: ${issue.pointer || '/'}: ${issue.message}`;
}
