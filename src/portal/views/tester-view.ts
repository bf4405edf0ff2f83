import type { TransformRequest } from '../../engine/index.ts';
import { html, type Html } from '../html.ts';
import type { Source } from '../publisher.ts';
import type { Session } from '../sessions.ts';
import type { Call, CallError, PropertyResult, TesterRun } from '../tester.ts';
import { page, postForm } from './layout.ts';

export interface TesterChoice {
  source: string;
  className: string;
  role: string;
  action: string;
  keys: 'sandbox' | 'live';
  values: Record<string, string>;
}

interface View {
  session: Session;
  choice: TesterChoice;
  sources: { ref: string; label: string }[];
  source: Source;
  classes: { name: string; properties: string[] }[];
  roles: string[];
  actions: string[];
  canLive: boolean;
  baseUrl: string;
  devClientId: string | undefined;
  run?: TesterRun;
  problem?: string;
}

const option = (value: string, selected: string, label = value) => html`<option value="${value}"${value === selected ? html` selected` : ''}>${label}</option>`;
const yesNo = (v: boolean | undefined, yes: string, no: string) =>
  v === undefined ? html`<span class="muted">–</span>` : html`<span class="${v ? 'ok' : 'warning'}">${v ? yes : no}</span>`;
const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function errorOf(e: CallError): Html {
  return html`<div class="error"><code>${e.code}</code> ${e.message}${e.details.length ? html`<ul>${e.details.map((d) => html`<li><code>${d.code}</code> at <code>${d.pointer}</code></li>`)}</ul>` : ''}</div>`;
}

/** "Copy as curl": a token from the token endpoint, then the exact request against the running service. */
function curl(view: View, request: TransformRequest, id: string): Html {
  const secret = view.devClientId ? `$(cat .veil/dev-client.secret)` : '$CLIENT_SECRET';
  const client = view.devClientId ?? '$CLIENT_ID';
  const text = `TOKEN=$(curl -s ${view.baseUrl}/connect/token -d grant_type=client_credentials -d client_id=${client} -d "client_secret=${secret}" | sed -E 's/.*"access_token":"([^"]+)".*/\\1/')
curl -s ${view.baseUrl}/transform -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d ${shellQuote(JSON.stringify(request))}`;
  return html`<pre id="${id}">${text}</pre><p><button type="button" class="secondary" data-copy="${id}">Copy as curl</button> <span class="muted">Runs against the active version of the running service.</span></p>`;
}

function callBlock(view: View, title: string, c: Call, id: string): Html {
  return html`<h3>${title}</h3>
<div class="split"><div><h4>Request (§2.1)</h4><pre id="${id}-request">${JSON.stringify(c.request, null, 2)}</pre></div>
<div><h4>${c.error ? 'Error' : 'Response (§2.7)'}</h4>${c.error ? html`${errorOf(c.error)}<pre>${JSON.stringify({ code: c.error.code, details: c.error.details }, null, 2)}</pre>` : html`<pre>${JSON.stringify(c.response, null, 2)}</pre>`}</div></div>
${curl(view, c.request, `${id}-curl`)}`;
}

function steps(list: PropertyResult['protectSteps']): Html {
  if (!list.length) return html`<span class="muted">–</span>`;
  return html`<ol>${list.map((s) => html`<li><code>${s.type}</code>: ${s.output !== undefined ? html`<code>${s.output}</code>` : html`<span class="error">${s.code}</span>`}</li>`)}</ol>`;
}

function results(view: View, run: TesterRun): Html {
  const action = view.choice.action;
  return html`<section aria-labelledby="results"><h2 id="results">Results (${view.choice.keys} keys, role ${view.choice.role})</h2>
<div class="scroll"><table>
<thead><tr><th scope="col">Property</th><th scope="col">Input</th><th scope="col">Protect</th><th scope="col">Same input twice</th><th scope="col">${action}</th><th scope="col">Round trip</th><th scope="col">Format</th><th scope="col">Steps</th></tr></thead>
<tbody>${run.properties.map(
    (p) => html`<tr data-property="${p.propertyName}">
<th scope="row">${p.propertyName}</th><td><code>${p.input}</code></td>
<td>${p.protectError ? errorOf(p.protectError) : html`<code>${p.protected ?? ''}</code>`}</td>
<td>${yesNo(p.deterministic, 'deterministic', 'randomized')}</td>
<td>${p.readError ? errorOf(p.readError) : p.read === undefined ? html`<span class="muted">–</span>` : html`<code>${p.read}</code>`}</td>
<td>${yesNo(p.roundTrip, 'returned the input', 'differs from the input')}</td>
<td>${p.format ? yesNo(p.format.ok, p.format.note, p.format.note) : html`<span class="muted">–</span>`}</td>
<td><strong>Protect</strong>${steps(p.protectSteps)}<strong>${action}</strong>${steps(p.readSteps)}</td></tr>`,
  )}</tbody>
</table></div>
<p class="muted">Step outputs are recomputed for display: randomized steps (aes-gcm) show a different output than the call.</p>
${callBlock(view, 'Protect call', run.protect, 'protect')}
${run.read ? callBlock(view, `${action} call`, run.read, 'read') : ''}
</section>`;
}

/** The Transform API tester: the configuration, class, evidences and values; then the results. */
export function testerPage(view: View): Html {
  const { choice, session } = view;
  const cls = view.classes.find((c) => c.name === choice.className) ?? view.classes[0];
  const roles = view.roles.includes(choice.role) || !choice.role ? view.roles : [choice.role, ...view.roles];
  return page(
    'Transform API tester',
    html`
<p>Sandbox keys are made for your session and never stored: simulate any role safely. Live keys run on the active version with your own roles, and each unprotect is audited.</p>
<form method="get" action="/admin/tester" class="row" aria-label="Choose a configuration and class">
<div><label for="t-source">Configuration</label><select id="t-source" name="source">${view.sources.map((s) => option(s.ref, choice.source, s.label))}</select></div>
<div><label for="t-class">Class</label><select id="t-class" name="className">${view.classes.map((c) => option(c.name, cls?.name ?? ''))}</select></div>
<div><button type="submit" class="secondary">Load</button></div></form>
${view.source.issues.some((i) => i.severity === 'error') ? html`<p class="error" role="alert">${view.source.label} is invalid; fix it before testing.</p>` : ''}
${postForm(
  session,
  '/admin/tester',
  html`
<input type="hidden" name="source" value="${choice.source}"><input type="hidden" name="className" value="${cls?.name ?? ''}">
<div class="row">
<div><label for="t-role">Rights context evidence: Role</label><select id="t-role" name="role">${roles.map((r) => option(r, choice.role))}</select></div>
<div><label for="t-action">Processing context evidence: Action (after Protect)</label><select id="t-action" name="action">${view.actions.map((a) => option(a, choice.action))}</select></div>
<fieldset><legend>Keys</legend>
<label><input type="radio" name="keys" value="sandbox"${choice.keys === 'sandbox' ? html` checked` : ''}> Sandbox (this session)</label>
<label><input type="radio" name="keys" value="live"${choice.keys === 'live' ? html` checked` : ''}${view.canLive ? '' : html` disabled`}> Live (active version, your roles${view.canLive ? '' : '; needs the tester right'})</label>
</fieldset></div>
<fieldset><legend>Values of ${cls?.name ?? 'the class'}</legend>
${(cls?.properties ?? []).map((p) => html`<div><label for="v-${p}">${p}</label><input type="text" id="v-${p}" name="value:${p}" value="${choice.values[p] ?? ''}" autocomplete="off"></div>`)}
</fieldset>
<p><button type="submit">Run Protect, then ${choice.action}</button></p>`,
  { label: 'Run the tester' },
)}
${view.problem ? html`<p class="error" role="alert">${view.problem}</p>` : ''}
${view.run ? results(view, view.run) : ''}`,
    { session, current: '/admin/tester' },
  );
}
