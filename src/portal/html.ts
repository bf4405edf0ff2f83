/**
 * The portal's template engine: a tagged template that escapes every interpolated value unless it
 * is itself an Html (built by this tag or `raw` for markup veil wrote). Arrays are joined. So a
 * class name, an evidence or an error message is always shown as text.
 */
export class Html {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);
}

function render(part: Part): string {
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return part.map(render).join('');
  if (part === null || part === undefined || part === false) return '';
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...parts: Part[]): Html {
  let out = strings[0]!;
  parts.forEach((p, i) => {
    out += render(p) + strings[i + 1]!;
  });
  return new Html(out);
}

/** Markup veil wrote itself (never caller input). */
export function raw(text: string): Html {
  return new Html(text);
}

/** An HTML id from a JSON pointer or any text: only safe characters, stable. */
export function idOf(prefix: string, text: string): string {
  return `${prefix}-${Buffer.from(text).toString('base64url')}`;
}
