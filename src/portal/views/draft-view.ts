import type { ConfigIssue } from '../../engine/index.ts';
import type { TestCase } from '../../control/index.ts';
import { DRAFT_LIMITS } from '../draft-limits.ts';
import { html, type Html } from '../html.ts';
import type { Source, TestOutcome } from '../publisher.ts';
import type { Session } from '../sessions.ts';
import { page, postForm } from './layout.ts';

/** What a saved test case may expect, in the order the form offers them. */
export const EXPECTATIONS: readonly TestCase['expect'][] = ['round-trip', 'denied', 'masked', 'changed'];

/** What the draft page shows, gathered by its route: the draft, its form, its tests' outcomes and what the admin may do. */
export interface DraftPageInput {
  session: Session;
  source: Source;
  /** the draft as the configuration form, and the issues the form has no place for */
  form: Html;
  unplaced: readonly ConfigIssue[];
  /** the saved test cases' outcomes, and what a case without one shows (the sandbox did not run it) */
  outcomes: readonly TestOutcome[];
  notRun: string;
  editor: boolean;
  publisher: boolean;
  /** four eyes: this admin edited the draft, so another publisher must publish it */
  selfReview: boolean;
  activeVersion: number;
  /** the reviewed text's hash the publish form carries */
  reviewedHash: string;
  flash?: string;
}

/** A draft's page (/admin/drafts/:id): validation, publish and delete, the form and the YAML, the saved test cases. */
export function draftPage(d: DraftPageInput): Html {
  const id = d.source.draftId!;
  return page(
    `Draft ${id.slice(0, 8)}`,
    html`
<p>${d.source.label}. <a href="/admin/diff?from=v${d.activeVersion}&amp;to=draft:${id}">Diff with the active version</a> · <a href="/admin/drafts/${id}/export">Export YAML</a> · <a href="/admin/tester?source=draft:${id}">Test it</a>${d.editor ? '' : html` · <span class="muted">read only: editing needs the editor right</span>`}</p>
${validationView(d.source.issues, d.unplaced)}
<div class="row">
${d.publisher && !d.selfReview ? postForm(d.session, `/admin/drafts/${id}/publish`, html`<input type="hidden" name="reviewed" value="${d.reviewedHash}"><button type="submit">Publish this draft</button>`) : ''}
${d.publisher && d.selfReview ? html`<p class="muted">Four eyes: you edited this draft, so another publisher must publish it.</p>` : ''}
${d.editor ? postForm(d.session, `/admin/drafts/${id}/delete`, html`<button type="submit" class="secondary">Delete draft</button>`) : ''}
</div>
<div class="split">
<section aria-labelledby="form-title"><h2 id="form-title">Form</h2>
${postForm(d.session, `/admin/drafts/${id}/fields`, html`${d.form}${d.editor ? html`<p><button type="submit">Save fields</button></p>` : ''}`, { label: 'Configuration form' })}
<p class="muted">Add, rename or remove entries, and edit identity, service and pipelines, in the YAML.</p></section>
<section aria-labelledby="yaml-title" class="yaml-pane"><h2 id="yaml-title">YAML</h2>
${postForm(d.session, `/admin/drafts/${id}/yaml`, html`<label for="draft-yaml">The whole configuration</label><textarea id="draft-yaml" name="yaml" spellcheck="false" wrap="off">${d.source.shown}</textarea>${d.editor ? html`<p><button type="submit">Save YAML</button></p>` : ''}`, { label: 'Configuration YAML' })}
</section>
</div>
${testsView(d)}`,
    { session: d.session, current: '/admin/versions', ...(d.flash ? { flash: d.flash } : {}) },
  );
}

function validationView(issues: readonly ConfigIssue[], unplaced: readonly ConfigIssue[]): Html {
  const errors = issues.filter((i) => i.severity === 'error');
  return html`<section aria-labelledby="validation"><h2 id="validation">Validation</h2>
${errors.length ? html`<div role="alert" class="error"><p>${errors.length} error(s): the draft cannot be published.</p><ul>${errors.map((i) => html`<li><code>${i.pointer || '/'}</code>: ${i.message}</li>`)}</ul></div>` : html`<p class="ok">Valid${issues.length ? html` with ${issues.length} warning(s)` : ''}.</p>`}
${unplaced.length ? html`<ul>${unplaced.filter((i) => i.severity === 'warning').map((i) => html`<li class="warning">${i.pointer || '/'}: ${i.message}</li>`)}</ul>` : ''}
</section>`;
}

function testsView(d: DraftPageInput): Html {
  const id = d.source.draftId!;
  return html`<section aria-labelledby="tests-title"><h2 id="tests-title">Saved test cases</h2>
<p>Run on sandbox keys against this draft; every one must pass before the draft can be published.</p>
<div class="scroll"><table><thead><tr><th scope="col">Name</th><th scope="col">Field</th><th scope="col">Role</th><th scope="col">Action</th><th scope="col">Expect</th><th scope="col">Result</th><th scope="col"><span class="sr-only">Delete</span></th></tr></thead><tbody>
${d.source.tests.map((t) => testRow(d, t))}</tbody></table></div>
${
  d.editor
    ? postForm(
        d.session,
        `/admin/drafts/${id}/tests`,
        html`<div class="row">
<div><label for="tc-name">Name</label><input type="text" id="tc-name" name="name" required maxlength="100"></div>
<div><label for="tc-field">Field (Class.property)</label><input type="text" id="tc-field" name="field" required pattern="[A-Za-z][A-Za-z0-9_-]*\\.[A-Za-z][A-Za-z0-9_-]*"></div>
<div><label for="tc-role">Role</label><input type="text" id="tc-role" name="role" required></div>
<div><label for="tc-action">Action</label><input type="text" id="tc-action" name="action" value="Unprotect" required></div>
<div><label for="tc-value">Test value (stored with the draft: use synthetic data)</label><input type="text" id="tc-value" name="value" required maxlength="${DRAFT_LIMITS.valueLength}"></div>
<div><label for="tc-expect">Expect</label><select id="tc-expect" name="expect">${EXPECTATIONS.map((e) => html`<option>${e}</option>`)}</select></div>
<div><button type="submit">Add test case</button></div></div>`,
        { label: 'Add a test case' },
      )
    : ''
}
</section>`;
}

function testRow(d: DraftPageInput, t: TestCase): Html {
  const o = d.outcomes.find((x) => x.test.id === t.id);
  return html`<tr><td>${t.name}</td><td>${t.className}.${t.propertyName}</td><td>${t.role}</td><td>${t.action}</td><td>${t.expect}</td><td>${o ? html`<span class="${o.pass ? 'ok' : 'error'}">${o.pass ? 'pass' : `fail: got ${o.got}`}</span>` : d.notRun}</td>
<td>${d.editor ? postForm(d.session, `/admin/drafts/${d.source.draftId!}/tests/delete`, html`<input type="hidden" name="test" value="${t.id}"><button type="submit" class="secondary">Delete</button>`, { class: 'inline' }) : ''}</td></tr>`;
}
