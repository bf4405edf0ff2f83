import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

/**
 * A minimal OAuth 2.0 authorization server for OAUTHBEARER tests: client credentials at /token
 * (HTTP Basic, as Kafka's clients send them), its signing key at /jwks.json (what the broker's
 * OAuthBearerValidatorCallbackHandler reads). Tokens are RS256 JWTs: sub the client id (the
 * principal the broker sees), aud `kafka`, a lifetime of `lifetimeSeconds`.
 */
export interface OidcProvider {
  url: string;
  tokenUrl: string;
  jwksUrl: string;
  /** tokens handed out so far, by client id */
  issued: Map<string, number>;
  close(): Promise<void>;
}

export async function startOidcProvider(clients: Record<string, string>, lifetimeSeconds = 300): Promise<OidcProvider> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const issued = new Map<string, number>();
  let base = '';
  const server: Server = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && req.url === '/jwks.json') return send(200, { keys: [jwk] });
    if (req.method !== 'POST' || req.url !== '/token') return send(404, { error: 'not_found' });
    let body = '';
    req.on('data', (d) => (body += String(d)));
    req.on('end', () => {
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const [id, secret] = basic ? Buffer.from(basic, 'base64').toString('utf8').split(':').map(decodeURIComponent) : [];
      if (!id || clients[id] === undefined || clients[id] !== secret) return send(401, { error: 'invalid_client' });
      if (new URLSearchParams(body).get('grant_type') !== 'client_credentials') return send(400, { error: 'unsupported_grant_type' });
      issued.set(id, (issued.get(id) ?? 0) + 1);
      const now = Math.floor(Date.now() / 1000);
      void new SignJWT({ scope: 'kafka' })
        .setProtectedHeader({ alg: 'RS256', kid: 'test-key' })
        .setSubject(id)
        .setIssuer(base)
        .setAudience('kafka')
        .setIssuedAt(now)
        .setExpirationTime(now + lifetimeSeconds)
        .sign(privateKey)
        .then((token) => send(200, { access_token: token, token_type: 'Bearer', expires_in: lifetimeSeconds }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  base = `http://127.0.0.1:${port}`;
  return {
    url: base,
    tokenUrl: `${base}/token`,
    jwksUrl: `${base}/jwks.json`,
    issued,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
