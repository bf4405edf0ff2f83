import { html, type Html } from '../html.ts';
import type { Session } from '../sessions.ts';

const NAV: readonly [string, string][] = [
  ['/admin', 'Overview'],
  ['/admin/versions', 'Versions'],
  ['/admin/tester', 'Tester'],
  ['/admin/matrix', 'Role × field'],
  ['/admin/keys', 'Keys'],
  ['/admin/pipelines', 'Pipelines'],
  ['/admin/discover', 'Discovery'],
  ['/admin/subjects', 'Subjects'],
  ['/admin/audit', 'Audit'],
];

/** A whole page: navigation, the signed-in admin, the content. No inline script or style. */
export function page(title: string, body: Html, options: { session?: Session; current?: string; flash?: string } = {}): Html {
  const { session, current } = options;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · veil admin</title>
<link rel="stylesheet" href="/admin/static/portal.css">
<script src="/admin/static/portal.js" defer></script>
</head>
<body>
<header class="top">
  <a class="brand" href="/admin">veil admin</a>
  ${
    session
      ? html`<nav aria-label="Main"><ul>${NAV.map(([href, label]) => html`<li><a href="${href}"${current === href ? html` aria-current="page"` : ''}>${label}</a></li>`)}</ul></nav>
  <form class="who" method="post" action="/admin/sign-out">
    <span title="${session.caller.roles.join(', ')}">${session.caller.subject}</span>
    ${csrfField(session)}
    <button type="submit">Sign out</button>
  </form>`
      : ''
  }
</header>
<main id="main">
${options.flash ? html`<p class="flash" role="status">${options.flash}</p>` : ''}
<h1>${title}</h1>
${body}
</main>
</body>
</html>`;
}

export function csrfField(session: Session): Html {
  return html`<input type="hidden" name="_csrf" value="${session.csrf}">`;
}

/** A POST form with the session's CSRF token. */
export function postForm(session: Session, action: string, content: Html, attrs: { class?: string; label?: string } = {}): Html {
  return html`<form method="post" action="${action}"${attrs.class ? html` class="${attrs.class}"` : ''}${attrs.label ? html` aria-label="${attrs.label}"` : ''}>${csrfField(session)}${content}</form>`;
}

export function errorPage(status: number, code: string, message: string, session?: Session): Html {
  return page(
    status === 403 ? 'Not allowed' : 'Something went wrong',
    html`<p class="error" role="alert"><code>${code}</code> ${message}</p><p><a href="/admin">Back to the overview</a></p>`,
    session ? { session } : {},
  );
}
