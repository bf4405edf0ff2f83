import { VeilError } from '../../engine/index.ts';
import { cachingKms, meteredKms, retryingKms } from './kms-decorators.ts';
import { KmsMetrics } from './kms-metrics.ts';
import type { Kms } from './kms.ts';

import type { Env } from '../../env/index.ts';

/** The KEK a process is configured with, built with its decorators. */
export interface KekSetup {
  /** cached (bounded lifetime) and retrying: what the keystore unwraps with */
  kms: Kms;
  /** retrying, never cached: what the lease renews with (it must reach the KMS) */
  direct: Kms;
  /** how long unwrapped keys stay usable without the KMS answering */
  ttlMs: number;
  /** every call that reaches the KMS (each retry counts), for the process's /metrics */
  metrics: KmsMetrics;
}

export const KMS_ENV = 'VEIL_KMS';
const DEFAULT_TTL_S = 300;

/**
 * VEIL_KMS selects the KEK (unset: the master key, the keystore in its master-key format):
 *   aws-kms   VEIL_KMS_KEY_ID (id, ARN or alias), VEIL_KMS_REGION (else AWS_REGION), optional
 *             VEIL_KMS_ENDPOINT; credentials from the AWS SDK's default chain
 *   pkcs11    VEIL_PKCS11_MODULE, VEIL_PKCS11_TOKEN, VEIL_PKCS11_PIN, VEIL_PKCS11_KEY_LABEL
 * VEIL_KMS_TTL_SECONDS (default 300): how long keys stay usable while the KMS does not answer.
 * Adapters load only when selected. A missing setting is CONFIG_INVALID naming the variable.
 */
export async function kekFromEnv(env: Env): Promise<KekSetup | undefined> {
  const kind = env[KMS_ENV];
  if (kind === undefined || kind === '') return undefined;
  const ttlText = env.VEIL_KMS_TTL_SECONDS ?? String(DEFAULT_TTL_S);
  const ttl = Number(ttlText);
  if (!Number.isFinite(ttl) || ttl <= 0 || ttl > 86_400)
    throw new VeilError('CONFIG_INVALID', 'VEIL_KMS_TTL_SECONDS must be a number of seconds in (0, 86400]');
  const adapter = await adapterFromEnv(env, kind);
  const metrics = new KmsMetrics();
  const direct = retryingKms(meteredKms(adapter, metrics));
  return { kms: cachingKms(direct, { ttlMs: ttl * 1000 }), direct, ttlMs: ttl * 1000, metrics };
}

/** The adapter VEIL_KMS names, without decorators (each loads only when selected). */
async function adapterFromEnv(env: Env, kind: string): Promise<Kms> {
  const need = (name: string): string => {
    const value = env[name];
    if (!value) throw new VeilError('CONFIG_INVALID', `VEIL_KMS=${kind} needs ${name}`);
    return value;
  };
  if (kind === 'aws-kms') {
    const { awsKms } = await import('./aws-kms.ts');
    return awsKms({
      keyId: need('VEIL_KMS_KEY_ID'),
      region: env.VEIL_KMS_REGION ?? env.AWS_REGION ?? 'us-east-1',
      ...(env.VEIL_KMS_ENDPOINT ? { endpoint: env.VEIL_KMS_ENDPOINT } : {}),
    });
  }
  if (kind === 'pkcs11') {
    const { pkcs11Kms } = await import('./pkcs11-kms.ts');
    return pkcs11Kms({
      library: need('VEIL_PKCS11_MODULE'),
      tokenLabel: need('VEIL_PKCS11_TOKEN'),
      pin: need('VEIL_PKCS11_PIN'),
      keyLabel: need('VEIL_PKCS11_KEY_LABEL'),
    });
  }
  throw new VeilError('CONFIG_INVALID', `VEIL_KMS must be aws-kms or pkcs11 (unset: the master key), not ${JSON.stringify(kind.slice(0, 32))}`);
}

/** The KEK VEIL_KMS names, bare (no cache, no retry): what `veil keys destroy-kek` destroys. Undefined without VEIL_KMS. */
export async function bareKekFromEnv(env: Env): Promise<Kms | undefined> {
  const kind = env[KMS_ENV];
  return kind ? adapterFromEnv(env, kind) : undefined;
}
