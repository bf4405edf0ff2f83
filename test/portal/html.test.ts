import { describe, expect, it } from 'vitest';
import { escapeHtml, html, raw } from '../../src/portal/html.ts';

describe('html template', () => {
  it('escapes every interpolated value, arrays included, and keeps nested templates', () => {
    const name = '<script>alert("x")</script>';
    const out = html`<p title="${name}">${name}${[name, html`<b>${'&'}</b>`]}${raw('<i>ok</i>')}${undefined}${false}${3}</p>`;
    expect(out.text).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;<b>&amp;</b><i>ok</i>3</p>',
    );
    expect(escapeHtml("'`")).toBe('&#39;&#96;');
  });
});
