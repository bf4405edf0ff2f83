import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { invalidSetting, type PropertyValue } from './client-properties.ts';
import type { Secret } from './secret.ts';

/** A PEM file a TLS setting names: its path (librdkafka reads it) and its text (kafkajs and fetch take it). */
export interface PemFile {
  path: string;
  pem: string;
}

function read(property: string, at: PropertyValue): string {
  try {
    return readFileSync(at.value, 'utf8');
  } catch (e) {
    throw invalidSetting(`${property} (${at.from}): cannot read ${at.value} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, property);
  }
}

const CERTIFICATES = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * A CA bundle or a certificate chain: PEM certificates, each parsed. A client certificate that is
 * expired or not yet valid is refused at start (`now`), rather than as a handshake failure later;
 * a CA bundle is taken as it is (an expired CA among others is common and harmless).
 */
export function certificateFile(property: string, at: PropertyValue, options: { checkValidity: boolean; now: Date }): PemFile {
  const pem = read(property, at);
  const blocks = pem.match(CERTIFICATES) ?? [];
  if (blocks.length === 0)
    throw invalidSetting(`${property} (${at.from}): ${at.value} holds no PEM certificate (convert a JKS or PKCS#12 store with keytool or openssl)`, property);
  let leaf: X509Certificate;
  try {
    [leaf] = blocks.map((b) => new X509Certificate(b)) as [X509Certificate];
  } catch {
    throw invalidSetting(`${property} (${at.from}): ${at.value} holds a certificate that does not parse`, property);
  }
  if (options.checkValidity) {
    if (new Date(leaf.validTo) < options.now)
      throw invalidSetting(`${property} (${at.from}): the certificate in ${at.value} expired on ${new Date(leaf.validTo).toISOString()}`, property);
    if (new Date(leaf.validFrom) > options.now)
      throw invalidSetting(`${property} (${at.from}): the certificate in ${at.value} is not valid before ${new Date(leaf.validFrom).toISOString()}`, property);
  }
  return { path: at.value, pem };
}

/** A private key in PEM, opened with its password when it is encrypted: a wrong password is refused at start. */
export function privateKeyFile(property: string, at: PropertyValue, password: Secret | undefined): PemFile {
  const pem = read(property, at);
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) throw invalidSetting(`${property} (${at.from}): ${at.value} holds no PEM private key`, property);
  try {
    createPrivateKey(password ? { key: pem, passphrase: password.reveal() } : { key: pem });
  } catch {
    const why = password ? 'does not open with ssl.key.password' : 'is encrypted and ssl.key.password is not set, or does not parse';
    throw invalidSetting(`${property} (${at.from}): the key in ${at.value} ${why}`, password ? 'ssl.key.password' : property);
  }
  return { path: at.value, pem };
}
