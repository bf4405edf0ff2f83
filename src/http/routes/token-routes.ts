import type { FastifyInstance } from 'fastify';
import type { JWK } from 'jose';
import type { JwtSigner } from '../../keystore/index.ts';
import { OAuthError } from '../../identity/errors.ts';
import type { TokenService } from '../../identity/index.ts';

interface ParsedForm {
  form: Record<string, string>;
  repeated: boolean;
}

interface Deps {
  tokens: TokenService;
  signer: JwtSigner;
  issuer: string;
  /** every version of the erasure receipt key (src/subjects/receipt.ts), published apart from the token keys */
  receiptKeys?: () => JWK[];
}

/**
 * POST /connect/token (RFC 6749 §4.4 client credentials; client_secret_post or HTTP Basic),
 * OpenID discovery, the JWKS of the token signing key and, apart from it, the erasure receipt key's.
 * Token errors use RFC 6749 §5.2 bodies, not problem details, because OAuth clients expect them;
 * responses carry Cache-Control: no-store.
 */
export function registerTokenRoutes(app: FastifyInstance, deps: Deps): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    // RFC 6749 §3.2: parameters must not repeat; the route refuses a repeated one
    const form: Record<string, string> = {};
    let repeated = false;
    for (const [k, v] of new URLSearchParams(body as string)) {
      if (Object.hasOwn(form, k)) repeated = true;
      form[k] = v;
    }
    done(null, { form, repeated } satisfies ParsedForm);
  });
  // any other body type reaches the route, which answers with an RFC 6749 error, not a 415
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, _body, done) => done(null, { form: {}, repeated: false } satisfies ParsedForm));

  app.post('/connect/token', async (req, reply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    try {
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (type !== 'application/x-www-form-urlencoded') throw new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded');
      const parsed = req.body as ParsedForm;
      if (parsed.repeated) throw new OAuthError('invalid_request', 'a parameter is repeated');
      const form: Record<string, string | undefined> = { ...parsed.form };
      const basic = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(req.headers.authorization ?? '');
      if (basic) {
        const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
        const colon = decoded.indexOf(':');
        if (colon < 0) throw new OAuthError('invalid_client', 'malformed Basic credentials');
        if (form.client_secret !== undefined) throw new OAuthError('invalid_request', 'use one client authentication method, not two');
        // RFC 6749 §2.3.1: id and secret are form-urlencoded inside Basic
        const id = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
        if (form.client_id !== undefined && form.client_id !== id) throw new OAuthError('invalid_request', 'client_id differs from the Basic credentials');
        form.client_id = id;
        form.client_secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
      }
      return reply.code(200).send(await deps.tokens.issue(form, req.ip));
    } catch (e) {
      const error = e instanceof OAuthError ? e : e instanceof URIError ? new OAuthError('invalid_request', 'malformed credentials') : undefined;
      if (!error) throw e;
      req.log.info({ oauthError: error.code }, 'token request refused');
      if (error.status === 401 && basicUsed(req.headers.authorization)) reply.header('www-authenticate', 'Basic realm="veil"');
      if (error.retryAfter) reply.header('retry-after', String(error.retryAfter));
      return reply.code(error.status).send({ error: error.code, error_description: error.message });
    }
  });

  app.get('/.well-known/openid-configuration', async () => ({
    issuer: deps.issuer,
    token_endpoint: `${deps.issuer}/connect/token`,
    jwks_uri: `${deps.issuer}/.well-known/jwks.json`,
    grant_types_supported: ['client_credentials'],
    token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
    token_endpoint_auth_signing_alg_values_supported: ['ES256'],
    id_token_signing_alg_values_supported: ['ES256'],
    response_types_supported: ['token'],
    subject_types_supported: ['public'],
  }));
  app.get('/.well-known/jwks.json', async (_req, reply) => reply.header('cache-control', 'max-age=300').send(deps.signer.jwks()));
  // the receipt key apart (issue 43): services verify veil's access tokens against jwks.json (the
  // discovery document's jwks_uri), and one that checks no typ or aud must not take a receipt for a token
  const receiptKeys = deps.receiptKeys;
  if (receiptKeys)
    app.get('/.well-known/veil-receipt-keys.json', async (_req, reply) => reply.header('cache-control', 'max-age=300').send({ keys: receiptKeys() }));
}

function basicUsed(header: string | undefined): boolean {
  return /^Basic /i.test(header ?? '');
}
