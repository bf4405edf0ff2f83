import { readFileSync } from 'node:fs';
import type { Env } from '../env/index.ts';
import { envName, readPropertiesFile, registryEnvName } from './client-properties.ts';
import { CONTROL_SCOPE, MAIN_SCOPE, SUBJECT_SCOPE } from './client-settings.ts';
import { parseJaasConfig } from './jaas-config.ts';

/** the properties whose values are secrets, or hold one (a JAAS line, user:password) */
const SECRET_KAFKA = ['sasl.password', 'sasl.jaas.config', 'sasl.oauthbearer.client.secret', 'ssl.key.password'];
const SECRET_REGISTRY = ['basic.auth.user.info', 'bearer.auth.token', 'schema.registry.ssl.key.password', 'schema.registry.url'];

/**
 * A last line of defence for what a process prints when it gives up: every secret its Kafka and
 * registry settings hold (variables, their _FILE files, the properties files), taken out of `text`.
 * Best effort and never throwing — it runs where the settings may be the very thing that is wrong.
 */
export function secretsOf(env: Env): (text: string) => string {
  const secrets = new Set<string>();
  const add = (value: string | undefined) => {
    if (!value || value.length < 3) return;
    secrets.add(value);
    for (const part of secretParts(value)) if (part.length >= 3) secrets.add(part);
  };
  for (const prefix of [MAIN_SCOPE, CONTROL_SCOPE, SUBJECT_SCOPE]) {
    for (const p of SECRET_KAFKA) fromEnv(env, envName(prefix, p), add);
    const file = env[`${prefix}CONFIG_FILE`];
    if (file) {
      try {
        const props = readPropertiesFile(file, `${prefix}CONFIG_FILE`);
        for (const p of [...SECRET_KAFKA, ...SECRET_REGISTRY]) add(props.get(p)?.value);
      } catch {
        // unreadable: it holds nothing this process could have printed
      }
    }
  }
  for (const p of SECRET_REGISTRY) fromEnv(env, registryEnvName(p), add);
  const list = [...secrets].sort((a, b) => b.length - a.length);
  return (text) => list.reduce((out, s) => out.split(s).join('[redacted]'), text);
}

function fromEnv(env: Env, name: string, add: (value: string | undefined) => void): void {
  add(env[name]);
  const path = env[`${name}_FILE`];
  if (!path) return;
  try {
    add(readFileSync(path, 'utf8').replace(/\r?\n$/, ''));
  } catch {
    // unreadable: nothing to take out
  }
}

/** The secret inside a composite value: a JAAS line's password and client secret, user:password's password, a URL's password. */
function secretParts(value: string): string[] {
  const out: string[] = [];
  try {
    const { options } = parseJaasConfig(value);
    for (const k of ['password', 'clientSecret']) if (options[k]) out.push(options[k]);
  } catch {
    // not a JAAS line
  }
  const colon = value.indexOf(':');
  if (colon > 0 && !value.includes('://')) out.push(value.slice(colon + 1));
  try {
    const url = new URL(value);
    if (url.password) out.push(decodeURIComponent(url.password), url.password);
  } catch {
    // not a URL
  }
  return out;
}
