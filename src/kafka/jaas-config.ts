import { KafkaError } from './kafka-error.ts';

/**
 * Java's `sasl.jaas.config`, as Confluent Cloud, MSK and Aiven hand it out in a client.properties:
 *
 *   org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";
 *
 * One login module, its control flag, `key=value` options (a value bare or quoted in " or ', with
 * backslash escapes inside quotes), a closing `;`. What veil takes of it: the mechanism family the
 * module implies and the options (username, password; for OAUTHBEARER clientId, clientSecret,
 * scope, extension_<name>). Hand-written: no npm package parses this grammar, and it is this small.
 */
export interface JaasConfig {
  family: 'PLAIN' | 'SCRAM' | 'OAUTHBEARER';
  options: Record<string, string>;
}

const MODULES: Record<string, JaasConfig['family']> = {
  'org.apache.kafka.common.security.plain.PlainLoginModule': 'PLAIN',
  'org.apache.kafka.common.security.scram.ScramLoginModule': 'SCRAM',
  'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule': 'OAUTHBEARER',
  // MSK's IAM module is AWS's own mechanism (AWS_MSK_IAM), which neither client here speaks
};

/** Why a sasl.jaas.config was refused (KafkaError JAAS_CONFIG_INVALID); never quotes the text (it holds a password). */
function syntaxError(message: string): KafkaError {
  return new KafkaError('JAAS_CONFIG_INVALID', message, false);
}

export function parseJaasConfig(text: string): JaasConfig {
  const s = text.trim();
  let i = 0;
  const skipSpace = () => {
    while (i < s.length && /\s/.test(s[i]!)) i++;
  };
  const word = () => {
    const start = i;
    while (i < s.length && /[A-Za-z0-9_.$-]/.test(s[i]!)) i++;
    return s.slice(start, i);
  };
  const module = word();
  const family = MODULES[module];
  if (!family)
    throw syntaxError(module ? `login module ${module} is not supported (PlainLoginModule, ScramLoginModule or OAuthBearerLoginModule)` : 'no login module');
  skipSpace();
  const flag = word();
  if (!['required', 'requisite', 'sufficient', 'optional'].includes(flag)) throw syntaxError('a control flag (required) must follow the login module');
  const options: Record<string, string> = {};
  for (;;) {
    skipSpace();
    if (s[i] === ';') break;
    if (i >= s.length) throw syntaxError('the configuration must end with ;');
    const key = word();
    if (!key || s[i] !== '=') throw syntaxError(`option ${Object.keys(options).length + 1}: expected name=value`);
    i++;
    if (Object.hasOwn(options, key)) throw syntaxError(`option ${key} is given twice`);
    options[key] = value();
  }
  i++;
  skipSpace();
  if (i < s.length) throw syntaxError('one login module only: text follows its ;');
  return { family, options };

  function value(): string {
    const quote = s[i];
    if (quote !== '"' && quote !== "'") {
      const start = i;
      while (i < s.length && !/[\s;]/.test(s[i]!)) i++;
      return s.slice(start, i);
    }
    let out = '';
    for (i++; i < s.length; i++) {
      const c = s[i]!;
      if (c === quote) {
        i++;
        return out;
      }
      if (c === '\\' && i + 1 < s.length) i++;
      out += s[i];
    }
    throw syntaxError('a quoted value is not closed');
  }
}
