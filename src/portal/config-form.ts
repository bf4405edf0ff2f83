import { isScalar, isSeq, parseDocument, Scalar, type Document } from 'yaml';
import type { ConfigIssue } from '../engine/index.ts';
import { html, idOf, type Html } from './html.ts';

/** The sections the form edits; the others (identity, service, pipelines) are edited as YAML. */
export const FORM_SECTIONS: readonly [string, string][] = [
  ['keys', 'Key references'],
  ['sequences', 'Transformer sequences'],
  ['classes', 'Classes and properties'],
  ['rightsContexts', 'Rights contexts'],
  ['processingContexts', 'Processing contexts'],
];

const escapeSegment = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const pointerOf = (path: readonly (string | number)[]) => path.map((p) => `/${escapeSegment(String(p))}`).join('');
const pathOf = (pointer: string) =>
  pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));

/** Issues by the pointer where the form shows them: the issue's own element, else its nearest shown ancestor. */
function placeIssues(issues: readonly ConfigIssue[], shown: ReadonlySet<string>): Map<string, ConfigIssue[]> {
  const placed = new Map<string, ConfigIssue[]>();
  for (const issue of issues) {
    let at = issue.pointer;
    while (at && !shown.has(at)) at = at.slice(0, at.lastIndexOf('/'));
    if (!at) continue;
    placed.set(at, [...(placed.get(at) ?? []), issue]);
  }
  return placed;
}

interface Node {
  pointer: string;
  label: string;
  kind: 'object' | 'scalar' | 'list';
  value?: string;
  children?: Node[];
}

function walk(value: unknown, path: (string | number)[], label: string): Node {
  const pointer = pointerOf(path);
  if (Array.isArray(value)) {
    if (value.every((v) => v === null || typeof v !== 'object')) return { pointer, label, kind: 'list', value: value.map(String).join(', ') };
    return { pointer, label, kind: 'object', children: value.map((v, i) => walk(v, [...path, i], `${label} ${i + 1}`)) };
  }
  if (value && typeof value === 'object') return { pointer, label, kind: 'object', children: Object.entries(value).map(([k, v]) => walk(v, [...path, k], k)) };
  return { pointer, label, kind: 'scalar', value: value === null || value === undefined ? '' : String(value) };
}

/**
 * The draft as a form: one fieldset per object of the edited sections, one labelled input per value
 * (`f:<pointer>`), lists of names as comma-separated inputs (`l:<pointer>`). Validation issues
 * appear next to the input or fieldset their pointer names.
 */
export function renderConfigForm(text: string, issues: readonly ConfigIssue[]): { form: Html; unplaced: ConfigIssue[] } {
  let doc: Record<string, unknown> = {};
  try {
    const parsed = parseDocument(text).toJS() as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) doc = parsed as Record<string, unknown>;
  } catch {
    // a YAML syntax error: the YAML pane shows it
  }
  const nodes = FORM_SECTIONS.filter(([s]) => Object.hasOwn(doc, s)).map(([s, title]) => walk(doc[s], [s], title));
  const shown = new Set<string>();
  const collect = (n: Node) => {
    shown.add(n.pointer);
    n.children?.forEach(collect);
  };
  nodes.forEach(collect);
  const placed = placeIssues(issues, shown);
  const issuesAt = (pointer: string) => {
    const list = placed.get(pointer) ?? [];
    return list.length
      ? html`<ul class="field-error" id="${idOf('e', pointer)}">${list.map((i) => html`<li>${i.severity === 'warning' ? 'warning: ' : ''}${i.pointer}: ${i.message}</li>`)}</ul>`
      : '';
  };
  const render = (n: Node, depth: number): Html => {
    const id = idOf('f', n.pointer);
    const describedBy = placed.has(n.pointer) ? html` aria-describedby="${idOf('e', n.pointer)}" aria-invalid="true"` : '';
    if (n.kind === 'object') {
      return html`<fieldset data-pointer="${n.pointer}"><legend>${n.label}</legend>${issuesAt(n.pointer)}${n.children!.map((c) => render(c, depth + 1))}</fieldset>`;
    }
    const name = `${n.kind === 'list' ? 'l' : 'f'}:${n.pointer}`;
    return html`<div class="input"><label for="${id}">${n.label}${n.kind === 'list' ? html` <span class="muted">(comma-separated)</span>` : ''}</label><input type="text" id="${id}" name="${name}" value="${n.value ?? ''}"${describedBy}>${issuesAt(n.pointer)}</div>`;
  };
  const unplaced = issues.filter((i) => ![...placed.values()].some((list) => list.includes(i)));
  return { form: html`${nodes.map((n) => render(n, 0))}`, unplaced };
}

/** A scalar as YAML text: plain when that reads back as the same string, else quoted as the original was (or double). */
function scalarText(value: unknown, original: Scalar): string {
  if (typeof value !== 'string') return String(value);
  const plainSafe = /^[A-Za-z_/][A-Za-z0-9 _./@-]*$/.test(value) && !/ $/.test(value) && !/^(true|false|null|yes|no|on|off|~)$/i.test(value);
  if (original.type === 'PLAIN' && plainSafe) return value;
  if (original.type === 'QUOTE_SINGLE') return `'${value.replace(/'/g, "''")}'`;
  return JSON.stringify(value);
}

/**
 * Applies a submitted form to the draft's YAML by editing only the text of the values that
 * changed, so comments, order and layout stay byte for byte. A number stays a number when the
 * input is one, true/false stay booleans; anything else is written as text (validation then says
 * what is wrong). Lists of names in flow style (`[a, b]`) are rewritten in place; a block list
 * falls back to re-serializing the document.
 */
export function applyConfigForm(text: string, entries: readonly [string, string][]): string {
  const doc: Document = parseDocument(text);
  const edits: { from: number; to: number; text: string }[] = [];
  let restructured = false;
  for (const [name, input] of entries) {
    const list = name.startsWith('l:');
    if (!list && !name.startsWith('f:')) continue;
    const path = pathOf(name.slice(2));
    if (!FORM_SECTIONS.some(([s]) => s === path[0])) continue;
    const node = doc.getIn(path, true);
    if (list) {
      if (!isSeq(node)) continue;
      const next = input
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const current = node.items.map((i) => String(isScalar(i) ? i.value : i));
      if (JSON.stringify(current) === JSON.stringify(next)) continue;
      if (node.flow && node.range) {
        const items = next.map((v) => scalarText(v, (node.items.find(isScalar) as Scalar | undefined) ?? new Scalar('')));
        edits.push({ from: node.range[0], to: node.range[1], text: `[${items.join(', ')}]` });
      } else {
        doc.setIn(path, doc.createNode(next));
        restructured = true;
      }
      continue;
    }
    if (!isScalar(node) || !node.range) continue;
    const current = node.value;
    if (String(current ?? '') === input) continue;
    let next: unknown = input;
    if (typeof current === 'number' && /^-?\d+(\.\d+)?$/.test(input.trim())) next = Number(input);
    else if (typeof current === 'boolean' && /^(true|false)$/.test(input.trim())) next = input.trim() === 'true';
    node.value = next;
    edits.push({ from: node.range[0], to: node.range[1], text: scalarText(next, node) });
  }
  if (restructured) return doc.toString({ lineWidth: 0, flowCollectionPadding: false });
  let out = text;
  for (const e of edits.sort((a, b) => b.from - a.from)) out = out.slice(0, e.from) + e.text + out.slice(e.to);
  return out;
}
