import type { AuditEvent } from '../../audit/index.ts';
import { html, type Html } from '../html.ts';
import type { Session } from '../sessions.ts';
import { page } from './layout.ts';

/** The Audit page (/admin/audit): one page of the log, newest first, and a link to the older ones. Records never hold a value. */
export function auditPage(options: { session: Session; events: readonly AuditEvent[]; cursor?: string; next?: string }): Html {
  const { events, cursor, next } = options;
  return page(
    'Audit',
    html`
<p>${cursor ? html`${events.length} older audit records` : html`The latest ${events.length} audit records`}, newest first. Records never hold a value.${cursor ? html` <a href="/admin/audit">Back to the latest</a>` : ''}</p>
<div class="scroll"><table><thead><tr><th scope="col">Time</th><th scope="col">Channel</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">Outcome</th></tr></thead>
<tbody>${events.map(auditRow)}</tbody></table></div>
${next ? html`<p><a href="/admin/audit?before=${next}" rel="next">Older records</a></p>` : ''}`,
    { session: options.session, current: '/admin/audit' },
  );
}

function auditRow(e: AuditEvent): Html {
  return html`<tr><td>${e.time}</td><td>${e.channel}</td><td>${e.subject ?? html`<span class="muted">unknown</span>`}</td>
<td>${e.admin ? html`${e.admin.action}${e.admin.target ? html` <span class="muted">${e.admin.target}</span>` : ''}` : html`${e.fields.map((f) => html`${f.action} ${f.className}.${f.propertyName} ×${f.count} `)}${e.fields.length ? '' : html`${e.instances} value(s)`}`}</td>
<td>${e.outcome}${e.code ? html` <code>${e.code}</code>` : ''}</td></tr>`;
}
