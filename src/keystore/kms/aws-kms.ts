import { DecryptCommand, DescribeKeyCommand, EncryptCommand, KMSClient, ScheduleKeyDeletionCommand } from '@aws-sdk/client-kms';
import { KmsError, type Kms } from './kms.ts';

export interface AwsKmsOptions {
  /** the KEK: a key id, key ARN, alias name or alias ARN */
  keyId: string;
  region?: string;
  /** another endpoint than AWS's (a VPC endpoint, LocalStack, moto_server) */
  endpoint?: string;
  /** else the SDK's default chain (environment, profile, instance role) */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** per request, connecting included (default 3 s): an unreachable KMS fails fast, then retrying decides */
  timeoutMs?: number;
}

/** AWS KMS's answers that no retry can change: the key, the ciphertext, the context or the caller is wrong. */
const REFUSALS = new Set([
  'InvalidCiphertextException',
  'IncorrectKeyException',
  'AccessDeniedException',
  'NotFoundException',
  'DisabledException',
  'KMSInvalidStateException',
  'InvalidKeyUsageException',
  'ValidationException',
  'UnrecognizedClientException',
  'InvalidGrantTokenException',
]);

/**
 * The KEK in AWS KMS (@aws-sdk/client-kms): wrap is Encrypt, unwrap is Decrypt, both with the
 * context as encryption context `veil:context` (AAD: Decrypt under another context fails). The
 * SDK's own retries are off (maxAttempts 1): retrying is the retryingKms decorator's, for what
 * is retriable only. Errors name the key and AWS's error name, never a message body.
 */
export function awsKms(options: AwsKmsOptions): Kms {
  const timeout = options.timeoutMs ?? 3_000;
  const client = new KMSClient({
    region: options.region ?? 'us-east-1',
    maxAttempts: 1,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    ...(options.credentials ? { credentials: options.credentials } : {}),
  });
  // the whole call, connecting included, is bounded: a KMS that accepts and never answers fails
  // too — within the adapter's timeout, or sooner when the caller's signal aborts (a lease renewal)
  const bounded = (signal: AbortSignal | undefined) => ({
    abortSignal: signal ? AbortSignal.any([AbortSignal.timeout(timeout), signal]) : AbortSignal.timeout(timeout),
  });
  const context = (c: string) => ({ 'veil:context': c });
  const fail = (op: string, e: unknown): KmsError => {
    const name = (e as { name?: string }).name ?? 'Error';
    const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    const what = `AWS KMS ${options.keyId}: ${op} failed (${name}${status ? `, HTTP ${status}` : ''})`;
    return new KmsError(REFUSALS.has(name) ? 'KMS_REFUSED' : 'KMS_UNAVAILABLE', what, { cause: e });
  };
  /** one call's bytes, or the KmsError it failed with (an answer without bytes is a failure too) */
  const call = async (op: string, send: () => Promise<Uint8Array | undefined>): Promise<Uint8Array> => {
    let out: Uint8Array | undefined;
    try {
      out = await send();
    } catch (e) {
      throw fail(op, e);
    }
    if (!out) throw fail(op, new Error(`no bytes in the ${op} answer`));
    return out;
  };
  return {
    description: `AWS KMS key ${options.keyId}${options.endpoint ? ` at ${options.endpoint}` : ''}`,
    async wrap(plaintext, c, o) {
      return call(
        'Encrypt',
        async () =>
          (await client.send(new EncryptCommand({ KeyId: options.keyId, Plaintext: plaintext, EncryptionContext: context(c) }), bounded(o?.signal)))
            .CiphertextBlob,
      );
    },
    async unwrap(wrapped, c, o) {
      return call(
        'Decrypt',
        async () =>
          (await client.send(new DecryptCommand({ KeyId: options.keyId, CiphertextBlob: wrapped, EncryptionContext: context(c) }), bounded(o?.signal)))
            .Plaintext,
      );
    },
    async close() {
      client.destroy();
    },
    async destroy({ pendingDays }) {
      let step = 'DescribeKey';
      try {
        // ScheduleKeyDeletion takes a key id or ARN, not an alias: the alias's key first
        const keyId = (await client.send(new DescribeKeyCommand({ KeyId: options.keyId }), bounded(undefined))).KeyMetadata?.KeyId;
        if (!keyId) throw new Error('no key id in the DescribeKey answer');
        step = 'ScheduleKeyDeletion';
        const answer = await client.send(new ScheduleKeyDeletionCommand({ KeyId: keyId, PendingWindowInDays: pendingDays }), bounded(undefined));
        return `AWS KMS key ${keyId} scheduled for deletion on ${answer.DeletionDate?.toISOString() ?? 'an unstated date'}: unusable from now`;
      } catch (e) {
        throw fail(step, e);
      }
    },
  };
}
