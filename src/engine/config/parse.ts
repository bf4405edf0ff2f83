import { LineCounter, parseDocument, isNode } from 'yaml';
import type { ConfigIssue } from './issues.ts';

export interface ParsedText {
  value: unknown;
  issues: ConfigIssue[];
  /** line of the node at a JSON-pointer path, when the source tells */
  lineOf: (path: readonly PropertyKey[]) => number | undefined;
}

/** Parses YAML (a superset of JSON, so .json files too) keeping positions for error messages. */
export function parseConfigText(text: string): ParsedText {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  const issues: ConfigIssue[] = doc.errors.map((e) => ({
    severity: 'error',
    pointer: '',
    message: e.message.split('\n')[0] ?? e.message,
    line: lines.linePos(e.pos[0]).line,
  }));
  const lineOf = (path: readonly PropertyKey[]): number | undefined => {
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n) as unknown[], true);
      if (isNode(node) && node.range) return lines.linePos(node.range[0]).line;
    }
    return undefined;
  };
  if (issues.length) return { value: undefined, issues, lineOf };
  try {
    return { value: doc.toJS({ maxAliasCount: 100 }), issues, lineOf };
  } catch (e) {
    // e.g. an alias bomb: excessive alias expansion is refused, not followed
    return { value: undefined, issues: [{ severity: 'error', pointer: '', message: (e as Error).message.split('\n')[0] ?? 'unreadable YAML' }], lineOf };
  }
}
