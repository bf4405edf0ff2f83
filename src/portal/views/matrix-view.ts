import { configuredRoles, fieldAccess, type CompiledConfig } from '../../engine/index.ts';
import { html, type Html } from '../html.ts';
import type { ConfigChoice } from '../publisher.ts';
import type { Session } from '../sessions.ts';
import { page } from './layout.ts';

const ACCESS_LABEL: Record<string, string> = { clear: 'clear', masked: 'masked', pseudonym: 'pseudonym', protected: 'protected', denied: 'denied' };

/**
 * The Role × field page (/admin/matrix): what each role gets when it reads each field of the chosen
 * configuration, as the engine decides it for a call whose rights context carries just that Role.
 */
export function matrixPage(options: { session: Session; ref: string; label: string; config?: CompiledConfig; choices: readonly ConfigChoice[] }): Html {
  const { ref, config } = options;
  return page(
    'Role × field',
    html`
<p>What each role gets when it reads each field of ${options.label}, as the engine decides it for a call whose rights context carries just that Role: <strong>clear</strong> (Unprotect), <strong>masked</strong> or <strong>pseudonym</strong> (another granted action), <strong>protected</strong>, or <strong>denied</strong>.</p>
<form method="get" action="/admin/matrix" class="row"><div><label for="m-source">Configuration</label><select id="m-source" name="source">
${options.choices.map((c) => html`<option value="${c.ref}"${ref === c.ref ? html` selected` : ''}>${c.label}</option>`)}
</select></div><div><button type="submit" class="secondary">Show</button></div></form>
${config ? matrixTable(config) : html`<p class="error" role="alert">This configuration is invalid.</p>`}`,
    { session: options.session, current: '/admin/matrix' },
  );
}

function matrixTable(config: CompiledConfig): Html {
  const fields = [...config.classes].flatMap(([c, props]) => [...props.keys()].map((p) => [c, p] as const));
  return html`<div class="scroll"><table class="matrix">
<thead><tr><th scope="col">Role</th>${fields.map(([c, p]) => html`<th scope="col">${c}.${p}</th>`)}</tr></thead>
<tbody>${configuredRoles(config).map(
    (role) =>
      html`<tr><th scope="row">${role}</th>${fields.map(([c, p]) => {
        const a = fieldAccess(config, role, c, p);
        return html`<td class="access-${a.access}" title="${a.action ? `${a.action} via ${a.rightsContexts.join(', ')}` : (a.code ?? '')}">${ACCESS_LABEL[a.access]}${a.action && a.action !== 'Unprotect' ? html` <span class="muted">(${a.action})</span>` : ''}</td>`;
      })}</tr>`,
  )}</tbody></table></div>`;
}
