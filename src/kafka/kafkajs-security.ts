import type { KafkaConfig, SASLOptions } from 'kafkajs';
import type { KafkaConnection } from './client-settings.ts';

/**
 * A connection's security as kafkajs takes it: `ssl` the options of Node's tls.connect (the CA
 * bundle, the client's certificate and key, hostname verification unless turned off), `sasl` the
 * mechanism with its credentials — OAUTHBEARER through the connection's token source, asked at
 * every (re)authentication (it hands out its cached token until it is due for renewal).
 */
export function kafkajsSecurity(connection: KafkaConnection): Pick<KafkaConfig, 'ssl' | 'sasl'> {
  const { tls, sasl } = connection;
  const out: Pick<KafkaConfig, 'ssl' | 'sasl'> = {};
  if (tls) {
    out.ssl = {
      rejectUnauthorized: true,
      ...(tls.ca ? { ca: [tls.ca.pem] } : {}),
      ...(tls.certificate ? { cert: tls.certificate.pem } : {}),
      ...(tls.key ? { key: tls.key.pem } : {}),
      ...(tls.keyPassword ? { passphrase: tls.keyPassword.reveal() } : {}),
      // ssl.endpoint.identification.algorithm=none: the chain is still verified, the name is not
      ...(tls.verifyHostname ? {} : { checkServerIdentity: () => undefined }),
    };
  }
  if (sasl) out.sasl = saslOptions(sasl);
  return out;
}

function saslOptions(sasl: NonNullable<KafkaConnection['sasl']>): SASLOptions {
  if (sasl.mechanism === 'OAUTHBEARER') {
    const tokens = sasl.tokens;
    return {
      mechanism: 'oauthbearer',
      oauthBearerProvider: async () => {
        const token = await tokens.token();
        return { value: token.value, ...(Object.keys(token.extensions).length ? { extensions: token.extensions } : {}) } as { value: string };
      },
    };
  }
  const mechanism = sasl.mechanism === 'PLAIN' ? 'plain' : sasl.mechanism === 'SCRAM-SHA-256' ? 'scram-sha-256' : 'scram-sha-512';
  return { mechanism, username: sasl.username, password: sasl.password.reveal() } as SASLOptions;
}
