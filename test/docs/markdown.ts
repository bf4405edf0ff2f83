import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What the documentation tests read of a markdown file: its prose, code spans, fenced blocks and headings. */
export interface MarkdownFile {
  /** path relative to the repository root, with `/` */
  path: string;
  text: string;
  /** lines outside fenced code blocks, with their 1-based line numbers */
  prose: { line: number; text: string }[];
  fences: { line: number; lang: string; body: string }[];
  /** GitHub's anchors of the file's headings (and of `<a id|name>` tags) */
  anchors: Set<string>;
}

export const ROOT = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');

/** README.md, docs/**\/*.md and the examples' READMEs: the pages a reader of a clone is sent to. */
export function documentationFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(`${dir}/${e.name}`) : e.name.endsWith('.md') ? [`${dir}/${e.name}`] : [],
    );
  const examples = readdirSync(join(ROOT, 'examples'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) =>
      readdirSync(join(ROOT, 'examples', e.name))
        .filter((f) => f === 'README.md')
        .map((f) => `examples/${e.name}/${f}`),
    );
  return ['README.md', ...walk('docs'), ...examples].sort();
}

export function readMarkdown(path: string): MarkdownFile {
  const text = readFileSync(join(ROOT, path), 'utf8');
  const prose: MarkdownFile['prose'] = [];
  const fences: MarkdownFile['fences'] = [];
  const headings: string[] = [];
  const anchors = new Set<string>();
  let fence: { marker: string; line: number; lang: string; lines: string[] } | undefined;
  text.split('\n').forEach((line, i) => {
    const open = /^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)/.exec(line);
    if (fence) {
      if (open && open[1]!.startsWith(fence.marker) && line.trim() === open[1]) {
        fences.push({ line: fence.line, lang: fence.lang, body: fence.lines.join('\n') });
        fence = undefined;
      } else fence.lines.push(line);
      return;
    }
    if (open) {
      fence = { marker: open[1]!, line: i + 1, lang: open[2]!.toLowerCase(), lines: [] };
      return;
    }
    prose.push({ line: i + 1, text: line });
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) headings.push(heading[1]!);
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  });
  const seen = new Map<string, number>();
  for (const heading of headings) {
    const base = githubSlug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return { path, text, prose, fences, anchors };
}

/**
 * The anchor GitHub gives a heading: its text as rendered (code spans without backticks, links
 * as their text), lower-cased, without characters other than letters, marks, numbers, `_`, `-`
 * and spaces, each space a hyphen (github-slugger's rule; repeats get -1, -2… in readMarkdown).
 */
export function githubSlug(heading: string): string {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/<[^>]+>/g, '');
  return rendered
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Relative links `[text](target)` of the prose (code spans and fenced blocks left out), with their line. */
export function relativeLinks(file: MarkdownFile): { line: number; target: string }[] {
  const links: { line: number; target: string }[] = [];
  for (const { line, text } of file.prose) {
    const withoutCode = text.replace(/`[^`]*`/g, '');
    for (const m of withoutCode.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      links.push({ line, target });
    }
  }
  return links;
}

/** Code spans of the prose. */
export function codeSpans(file: MarkdownFile): { line: number; code: string }[] {
  return file.prose.flatMap(({ line, text }) => [...text.matchAll(/`([^`]+)`/g)].map((m) => ({ line, code: m[1]! })));
}

/**
 * The simple commands of a shell block: continuation lines joined, heredoc bodies and comments
 * left out, split at `&&`, `||`, `;`, `|`, `&` and `$(`, leading `NAME=value` assignments removed.
 */
export function shellCommands(body: string): string[] {
  const lines: string[] = [];
  let heredoc: string | undefined;
  let pending = '';
  for (const raw of body.split('\n')) {
    if (heredoc !== undefined) {
      if (raw.trim() === heredoc) heredoc = undefined;
      continue;
    }
    const here = /<<-?\s*['"]?(\w+)['"]?/.exec(raw);
    if (here) heredoc = here[1]!;
    const line = stripComment(raw);
    if (line.endsWith('\\')) {
      pending += line.slice(0, -1) + ' ';
      continue;
    }
    lines.push(pending + line);
    pending = '';
  }
  if (pending) lines.push(pending);
  return lines
    .flatMap((l) => l.split(/&&|\|\||;|\||&|\$\(|\(/))
    .map((c) => c.trim().replace(/^(?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|"[^"]*"|\S*)\s+)+/, ''))
    .filter(Boolean);
}

function stripComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i).trimEnd();
  }
  return line.trimEnd();
}

/** `veil <group> [<sub>]` of a command that runs veil's command line, or undefined. */
export function veilInvocation(command: string): { group: string; sub?: string } | undefined {
  const m = /^(?:(?:\.\/)?bin\/veil|veil|scripts\/node22 src\/cli\/main\.ts|npm run veil --)\s+(\S+)(?:\s+(\S+))?/.exec(command.trim());
  if (!m || !/^[a-z][a-z0-9-]*$/.test(m[1]!)) return undefined;
  const sub = m[2] !== undefined && /^[a-z][a-z0-9-]*$/.test(m[2]) ? m[2] : undefined;
  return { group: m[1]!, sub };
}

export const SHELL_LANGS = new Set(['', 'sh', 'bash', 'shell', 'console']);
