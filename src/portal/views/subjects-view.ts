import type { ErasureResult, SubjectStatus } from '../../subjects/index.ts';
import { html, type Html } from '../html.ts';
import type { Session } from '../sessions.ts';
import { page, postForm } from './layout.ts';

/** What a POST of the Subjects page produced: a status, an erasure, or a refusal (code and message, never the id). */
export type SubjectsOutcome =
  { kind: 'status'; status: SubjectStatus } | { kind: 'erased'; result: ErasureResult } | { kind: 'problem'; code: string; message: string };

/**
 * The Subjects page (/admin/subjects): look a data subject up (any admin), erase it (publisher)
 * with a reason and a confirmation, and the receipt. The id is posted, never put in a URL, and the
 * forms come back empty: the page never shows an id it was given.
 */
export function subjectsPage(options: { session: Session; canErase: boolean; available: boolean; outcome?: SubjectsOutcome }): Html {
  const { session, canErase, available, outcome } = options;
  return page(
    'Subjects',
    html`
<p>Erasure by crypto-shredding: erasing a data subject destroys the subject's own key, so every value protected under it becomes unreadable everywhere, for good. Subjects are named here by their reference (a keyed hash); the id you enter is sent in the form, never in the address, and not shown back.</p>
${available ? '' : html`<p class="error" role="alert">This service has no subject-key store.</p>`}
${outcome ? outcomeView(outcome) : ''}
<section aria-labelledby="look-up"><h2 id="look-up">Look up a subject</h2>
${postForm(
  session,
  '/admin/subjects',
  html`<input type="hidden" name="op" value="status">
<div class="row"><div><label for="status-subject">Subject id</label><input type="text" id="status-subject" name="subject" required maxlength="512" autocomplete="off" spellcheck="false"></div>
<div><button type="submit" class="secondary">Look up</button></div></div>`,
  { label: 'Look up a subject' },
)}
</section>
<section aria-labelledby="erase"><h2 id="erase">Erase a subject</h2>
${
  canErase
    ? postForm(
        session,
        '/admin/subjects',
        html`<input type="hidden" name="op" value="erase">
<label for="erase-subject">Subject id</label><input type="text" id="erase-subject" name="subject" required maxlength="512" autocomplete="off" spellcheck="false">
<label for="erase-reason">Reason</label><input type="text" id="erase-reason" name="reason" required maxlength="500" autocomplete="off" aria-describedby="erase-reason-hint">
<p class="muted" id="erase-reason-hint">1 to 500 characters, e.g. the request's reference. It goes into the receipt and the audit log: do not name the subject.</p>
<p><label class="inline"><input type="checkbox" name="confirm" value="yes" required> I understand that this cannot be undone</label></p>
<button type="submit">Erase subject</button>`,
        { label: 'Erase a subject' },
      )
    : html`<p class="muted">Erasing needs the publisher right (role admin-publisher).</p>`
}
</section>`,
    { session, current: '/admin/subjects' },
  );
}

function outcomeView(outcome: SubjectsOutcome): Html {
  if (outcome.kind === 'problem') return html`<p class="error" role="alert"><code>${outcome.code}</code> ${outcome.message}</p>`;
  if (outcome.kind === 'status') return statusView(outcome.status);
  const { receipt, claims } = outcome.result;
  return html`<section class="flash" role="status" aria-labelledby="receipt-heading"><h2 id="receipt-heading">${claims.alreadyErased ? 'Already erased' : 'Erased'}</h2>
<p>${claims.alreadyErased ? "The subject was erased before: the receipt names that erasure's time and key." : "The subject's key is destroyed in every process of the store."}</p>
<div class="scroll"><table><tbody>
<tr><th scope="row">Subject reference</th><td><code>${claims.sub}</code></td></tr>
<tr><th scope="row">Generation</th><td>${claims.generation}</td></tr>
<tr><th scope="row">Erased at</th><td>${claims.erasedAt}</td></tr>
<tr><th scope="row">By</th><td>${claims.by}</td></tr>
<tr><th scope="row">Reason</th><td>${claims.reason}</td></tr>
<tr><th scope="row">Destroyed key (SHA-256 of the wrapped key)</th><td>${claims.destroyedKey ? html`<code>${claims.destroyedKey}</code>` : html`<span class="muted">the subject had no key</span>`}</td></tr>
<tr><th scope="row">Receipt id</th><td><code>${claims.jti}</code></td></tr>
</tbody></table></div>
<h3>Receipt</h3>
<pre id="receipt">${receipt}</pre>
<p><button type="button" class="secondary" data-copy="receipt">Copy the receipt</button> Verify it with <code>veil subjects verify-receipt</code> (docs/erasure.md, Receipts).</p>
</section>`;
}

function statusView(status: SubjectStatus): Html {
  const detail =
    status.state === 'exists'
      ? html`has a key: generation ${status.generation}, created ${status.createdAt}`
      : status.state === 'erased'
        ? html`was erased: generation ${status.generation}, at ${status.erasedAt}`
        : html`is unknown: no key was ever created for it, and it was never erased`;
  return html`<section class="flash" role="status" aria-labelledby="status-heading"><h2 id="status-heading">Status: ${status.state}</h2>
<p>The subject with reference <code>${status.subject}</code> ${detail}.</p></section>`;
}
