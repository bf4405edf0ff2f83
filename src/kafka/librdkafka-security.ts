import type { KafkaConnection } from './client-settings.ts';

type Token = { tokenValue: string; lifetime: number; principal: string; extensions?: Record<string, string> };
export type LibrdkafkaSecurity = Record<string, string | boolean | ((config: string) => Promise<Token>)>;

/**
 * A connection's security as librdkafka's properties (the names the connection was read by):
 * security.protocol, the PEM files' locations, sasl.*. OAUTHBEARER through the binding's
 * oauthbearer_token_refresh_cb, fed by the connection's token source (this build of librdkafka has
 * no libcurl, so not its own sasl.oauthbearer.method=oidc).
 */
export function librdkafkaSecurity(connection: KafkaConnection): LibrdkafkaSecurity {
  const { tls, sasl } = connection;
  const out: LibrdkafkaSecurity = { 'security.protocol': connection.protocol.toLowerCase() };
  if (tls) {
    out['enable.ssl.certificate.verification'] = true;
    out['ssl.endpoint.identification.algorithm'] = tls.verifyHostname ? 'https' : 'none';
    if (tls.ca) out['ssl.ca.location'] = tls.ca.path;
    if (tls.certificate) out['ssl.certificate.location'] = tls.certificate.path;
    if (tls.key) out['ssl.key.location'] = tls.key.path;
    if (tls.keyPassword) out['ssl.key.password'] = tls.keyPassword.reveal();
  }
  if (sasl?.mechanism === 'OAUTHBEARER') {
    const tokens = sasl.tokens;
    out['sasl.mechanisms'] = 'OAUTHBEARER';
    out.oauthbearer_token_refresh_cb = async () => {
      const token = await tokens.token();
      return {
        tokenValue: token.value,
        lifetime: token.expiresAt,
        principal: token.principal,
        ...(Object.keys(token.extensions).length ? { extensions: token.extensions } : {}),
      };
    };
  } else if (sasl) {
    out['sasl.mechanisms'] = sasl.mechanism;
    out['sasl.username'] = sasl.username;
    out['sasl.password'] = sasl.password.reveal();
  }
  return out;
}
