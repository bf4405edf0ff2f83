import { html, type Html } from '../html.ts';
import { page } from './layout.ts';

/**
 * The sign-in page (/admin/sign-in): with a configured client's id and secret, or with a token.
 * `next` is where a sign-in goes (already checked to be a portal path); `problem` says why the
 * last attempt was refused; in development the dev client's id is filled in.
 */
export function signInPage(options: { next: string; devClientId: string | undefined; problem?: string }): Html {
  const { next, devClientId, problem } = options;
  return page(
    'Sign in',
    html`
${problem ? html`<p class="error" role="alert">${problem}</p>` : ''}
<div class="split">
<form method="post" action="/admin/sign-in" aria-labelledby="with-client">
  <h2 id="with-client">With a client's credentials</h2>
  <input type="hidden" name="kind" value="client"><input type="hidden" name="next" value="${next}">
  <label for="client_id">Client id</label><input type="text" id="client_id" name="client_id" autocomplete="username" required${devClientId ? html` value="${devClientId}"` : ''}>
  <label for="client_secret">Client secret</label><input type="password" id="client_secret" name="client_secret" autocomplete="current-password" required>
  ${devClientId ? html`<p class="muted">Development: the secret of ${devClientId} is in the data directory's dev-client.secret.</p>` : ''}
  <p><button type="submit">Sign in</button></p>
</form>
<form method="post" action="/admin/sign-in" aria-labelledby="with-token">
  <h2 id="with-token">With a token from an identity provider</h2>
  <input type="hidden" name="kind" value="token"><input type="hidden" name="next" value="${next}">
  <label for="token">Access token (JWT)</label><input type="password" id="token" name="token" autocomplete="off" required>
  <p><button type="submit">Sign in with the token</button></p>
</form>
</div>`,
  );
}
