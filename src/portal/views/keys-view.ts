import type { KeyInfo } from '../../engine/index.ts';
import { html, type Html } from '../html.ts';
import { holds, type Session } from '../sessions.ts';
import { page, postForm } from './layout.ts';

/**
 * The Keys page (/admin/keys): each key's metadata — versions, primary, the properties of the active
 * version that use it — and, for a publisher, Rotate. Key material never leaves the keystore.
 */
export function keysPage(options: {
  session: Session;
  keystorePath: string;
  keys: readonly KeyInfo[];
  users: ReadonlyMap<string, readonly string[]>;
  flash?: string;
}): Html {
  const { session, keys, users } = options;
  return page(
    'Keys',
    html`
<p>Metadata only: key material never leaves the keystore (<code>${options.keystorePath}</code>). Usage is that of the active version.</p>
<div class="scroll"><table><thead><tr><th scope="col">Key id</th><th scope="col">Type</th><th scope="col">Versions (created)</th><th scope="col">Primary</th><th scope="col">Used by</th><th scope="col"><span class="sr-only">Rotate</span></th></tr></thead>
<tbody>${keys.map(
      (k) => html`<tr><th scope="row">${k.id}</th><td>${k.type}</td>
<td><ul>${k.versions.map((v) => html`<li>${v.version}: ${v.createdAt} (${v.origin})</li>`)}</ul></td><td>${k.primary}</td>
<td>${(users.get(k.id) ?? []).length ? html`<ul>${users.get(k.id)!.map((u) => html`<li>${u}</li>`)}</ul>` : html`<span class="muted">no property</span>`}</td>
<td>${holds(session, 'publisher') ? postForm(session, `/admin/keys/${k.id}/rotate`, html`<button type="submit" class="secondary" aria-label="Rotate ${k.id}">Rotate</button>`) : ''}</td></tr>`,
    )}</tbody></table></div>
<p class="muted">Rotating adds a new primary version: protect uses it unless a key reference pins a version (FPE); older versions still unprotect.</p>`,
    { session, current: '/admin/keys', ...(options.flash ? { flash: options.flash } : {}) },
  );
}
