import type { Finding } from '../../discover/index.ts';
import { html, type Html } from '../html.ts';
import type { Session } from '../sessions.ts';
import { page, postForm } from './layout.ts';

/** A finding as the page's draft form carries it (paths, kinds and counts only); the route reads it back and checks it again. */
export function findingField(f: Finding): string {
  return [f.path, f.kind, f.matched, f.values].join('\t');
}

/** The form that takes sample records (JSON lines) and the topic they come from. */
function recordsForm(session: Session): Html {
  return postForm(
    session,
    '/admin/discover',
    html`
<div><label for="discover-records">Sample records, one JSON document per line (use synthetic or already approved data: the records are profiled in memory and not kept)</label>
<textarea id="discover-records" name="records" spellcheck="false" wrap="off" required></textarea></div>
<div class="row"><div><label for="discover-topic">Topic they come from (optional: the draft then has a protect pipeline)</label><input type="text" id="discover-topic" name="topic" pattern="[A-Za-z0-9._\\-]{1,249}"></div>
<div><button type="submit">Find personal data</button></div></div>`,
    { label: 'Discover personal data' },
  );
}

/** The Discovery page (/admin/discover): what it finds, and the form. */
export function discoverPage(session: Session): Html {
  return page(
    'Discovery',
    html`<p>Finds which fields of sample records hold personal data (validators: card numbers by Luhn and issuer, IBANs by mod 97, phone numbers by country, national ids by their checks; names and dates of birth by their field's name) and proposes how to protect them.</p>
${recordsForm(session)}`,
    { session, current: '/admin/discover' },
  );
}

/** What a sample showed: the fields found (paths, kinds and counts, never a value), a form to make the proposal a draft, and the form again. */
export function discoverResultPage(d: { session: Session; profiled: number; unparsable: number; findings: readonly Finding[]; topic: string }): Html {
  const { session, findings } = d;
  return page(
    'Discovery',
    html`<p>Profiled ${d.profiled} record(s)${d.unparsable ? html`, ${d.unparsable} line(s) not JSON (skipped)` : ''}: ${findings.length} field(s) hold personal data.</p>
${
  findings.length
    ? html`<div class="scroll"><table><caption>Fields found</caption><thead><tr><th scope="col">Path</th><th scope="col">Kind</th><th scope="col">Matched</th><th scope="col">Share</th><th scope="col">Confidence</th></tr></thead>
<tbody>${findings.map((f) => html`<tr><th scope="row"><code>${f.path}</code></th><td>${f.kind}</td><td>${f.matched} of ${f.values}</td><td>${(f.share * 100).toFixed(1)}%</td><td>${f.confidence}</td></tr>`)}</tbody></table></div>
${postForm(
  session,
  '/admin/discover/draft',
  html`${findings.map((f) => html`<input type="hidden" name="finding" value="${findingField(f)}">`)}<input type="hidden" name="topic" value="${d.topic}">
<button type="submit">Create a draft from this proposal</button>`,
  { label: 'Create a draft' },
)}`
    : ''
}
<h2>Another sample</h2>
${recordsForm(session)}`,
    { session, current: '/admin/discover' },
  );
}
