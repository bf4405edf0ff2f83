import type { ActiveConfig, DraftMeta, VersionMeta } from '../../control/index.ts';
import type { ConfigView } from '../config-port.ts';
import type { DiffLine } from '../config-diff.ts';
import { html, type Html } from '../html.ts';
import type { ConfigChoice } from '../publisher.ts';
import { holds, type Session } from '../sessions.ts';
import { page, postForm } from './layout.ts';

/** The Overview page (/admin): the active version, who is signed in with which rights, the drafts, and (for an editor) a new draft or an import. */
export function overviewPage(options: {
  session: Session;
  active: ActiveConfig<ConfigView>;
  versionsDir: string;
  drafts: readonly DraftMeta[];
  flash?: string;
}): Html {
  const { session, active, drafts } = options;
  return page(
    'Overview',
    html`
<p>The running service uses <a href="/admin/versions/${active.version}">version ${active.version}</a> (configuration hash <code>${active.config.version}</code>).
Published versions are files in <code>${options.versionsDir}</code>.</p>
<p>Signed in as <strong>${session.caller.subject}</strong> (${session.caller.issuer}) until ${session.expiresAt.toISOString()}; rights: ${(['viewer', 'editor', 'publisher', 'tester'] as const).filter((r) => holds(session, r)).join(', ')}.</p>
<h2>Drafts</h2>
${drafts.length ? html`<ul>${drafts.map((d) => html`<li><a href="/admin/drafts/${d.id}">Draft ${d.id.slice(0, 8)}</a> from version ${d.basedOn}, by ${d.by}, saved ${d.updatedAt}</li>`)}</ul>` : html`<p>No drafts.</p>`}
${
  holds(session, 'editor')
    ? html`
${postForm(session, '/admin/drafts', html`<input type="hidden" name="from" value="v${active.version}"><button type="submit">New draft from version ${active.version}</button>`)}
<h2>Import</h2>
${postForm(session, '/admin/drafts', html`<label for="import-yaml">Configuration YAML to import as a new draft</label><textarea id="import-yaml" name="yaml" rows="8" required></textarea><p><button type="submit">Import as draft</button></p>`)}`
    : ''
}
`,
    { session, current: '/admin', ...(options.flash ? { flash: options.flash } : {}) },
  );
}

/** The Versions page (/admin/versions): every published version, newest first, with export and diff links. */
export function versionsPage(options: { session: Session; versions: readonly VersionMeta[]; active: number; flash?: string }): Html {
  const { active } = options;
  return page(
    'Versions',
    html`
<p>Published versions are immutable and numbered; reverting publishes the old content as a new version.</p>
<div class="scroll"><table>
<thead><tr><th scope="col">Version</th><th scope="col">Published</th><th scope="col">By</th><th scope="col">Note</th><th scope="col">Actions</th></tr></thead>
<tbody>${options.versions.map(
      (
        v,
      ) => html`<tr><td><a href="/admin/versions/${v.number}">${v.number}</a>${v.number === active ? html` <strong>(active)</strong>` : ''}</td><td>${v.publishedAt}</td><td>${v.by}</td><td>${v.note}</td>
<td><a href="/admin/versions/${v.number}/export">Export</a>${v.number > 1 ? html` · <a href="/admin/diff?from=v${v.number - 1}&amp;to=v${v.number}">Diff with ${v.number - 1}</a>` : ''}</td></tr>`,
    )}</tbody>
</table></div>
<p><a href="/admin/diff">Compare any two versions or drafts</a></p>`,
    { session: options.session, current: '/admin/versions', ...(options.flash ? { flash: options.flash } : {}) },
  );
}

/** One published version's page (/admin/versions/:n): its YAML (secret hashes hidden), a new draft from it, and revert. */
export function versionPage(options: { session: Session; n: number; label: string; file: string; shown: string; active: number }): Html {
  const { session, n } = options;
  return page(
    `Version ${n}`,
    html`
<p>${options.label}. File: <code>${options.file}</code>. <a href="/admin/versions/${n}/export">Export YAML</a></p>
<div class="row">
${holds(session, 'editor') ? postForm(session, '/admin/drafts', html`<input type="hidden" name="from" value="v${n}"><button type="submit">New draft from this version</button>`) : ''}
${holds(session, 'publisher') && n !== options.active ? postForm(session, `/admin/versions/${n}/revert`, html`<button type="submit" class="secondary">Revert to this version</button>`) : ''}
</div>
<h2>YAML</h2><pre>${options.shown}</pre>`,
    { session, current: '/admin/versions' },
  );
}

/** The Diff page (/admin/diff): two configurations, what would make stored data unreadable, what needs a restart, and the lines. */
export function diffPage(options: {
  session: Session;
  choices: readonly ConfigChoice[];
  from: string;
  to: string;
  fromLabel: string;
  toLabel: string;
  warnings: readonly string[];
  restart: readonly string[];
  lines: readonly DiffLine[];
  flash?: string;
}): Html {
  const { warnings, restart, lines } = options;
  const picker = (name: string, selected: string, label: string) =>
    html`<div><label for="diff-${name}">${label}</label><select id="diff-${name}" name="${name}">${options.choices.map((r) => html`<option value="${r.ref}"${r.ref === selected ? html` selected` : ''}>${r.label}</option>`)}</select></div>`;
  return page(
    'Diff',
    html`
<form method="get" action="/admin/diff" class="row">${picker('from', options.from, 'From')}${picker('to', options.to, 'To')}<div><button type="submit">Compare</button></div></form>
<h2>${options.fromLabel} → ${options.toLabel}</h2>
${warnings.length ? html`<div role="alert"><h3 class="warning">Stored data would become unreadable</h3><ul>${warnings.map((w) => html`<li class="warning">${w}</li>`)}</ul></div>` : html`<p class="ok">No change makes stored data unreadable.</p>`}
${restart.length ? html`<p class="warning">Changes to ${restart.join(', ')} take effect when the service restarts; publishing swaps keys, sequences, classes and contexts at once.</p>` : ''}
${lines.every((l) => l.op === ' ') ? html`<p>The two are identical.</p>` : ''}
<pre class="diff">${lines.map((l) => html`<span class="${l.op === '+' ? 'diff-add' : l.op === '-' ? 'diff-del' : 'diff-same'}">${l.op} ${l.text}</span>`)}</pre>`,
    { session: options.session, current: '/admin/versions', ...(options.flash ? { flash: options.flash } : {}) },
  );
}
