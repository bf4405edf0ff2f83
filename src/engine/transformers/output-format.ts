import { ValueError } from '../errors.ts';

/**
 * Keyed outputs carry a 5-byte header like Tink's output prefix: a format tag naming the
 * transformer and output version, then the key version as a big-endian uint32. The header is
 * authenticated (it is part of the associated data). The whole is base64url without padding,
 * so protected values are text-safe in JSON, CSV, URLs and database columns.
 */
export const FORMAT_TAGS = { 'aes-siv': 0xa1, 'aes-gcm': 0xa2, 'hmac-sha256': 0xa3 } as const;
export const HEADER_BYTES = 5;

export function header(tag: number, version: number): Uint8Array {
  return Uint8Array.of(tag, version >>> 24, (version >>> 16) & 0xff, (version >>> 8) & 0xff, version & 0xff);
}

/**
 * A fresh output buffer with the header written, sized header + `body` bytes. A Buffer, so
 * encoding it to base64url needs no wrapper.
 */
export function outputBuffer(h: Uint8Array, body: number): Buffer {
  const out = Buffer.allocUnsafe(HEADER_BYTES + body);
  out.set(h);
  return out;
}

export function encode(bytes: Uint8Array): string {
  return (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)).toString('base64url');
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * Whether base64url text (alphabet checked, length % 4 not 1) is the canonical spelling of its
 * bytes (RFC 4648 §3.5): the bits of the last character past the last whole byte are zero — 4 of
 * them after 2 characters of a group, 2 after 3. The same answer as re-encoding the decoded bytes
 * and comparing, without doing it.
 */
function canonicalTail(value: string): boolean {
  const rest = value.length % 4;
  if (rest === 0) return true;
  const bits = ALPHABET.indexOf(value[value.length - 1]!);
  return (bits & (rest === 2 ? 0x0f : 0x03)) === 0;
}

/** Decodes a protected value and checks its tag; returns the key version and the payload. */
export function decode(value: string, tag: number, minPayload: number): { version: number; header: Uint8Array; payload: Uint8Array } {
  if (!BASE64URL.test(value) || value.length % 4 === 1) {
    throw new ValueError('PROTECTED_VALUE_INVALID', 'is not base64url text');
  }
  // Buffer ignores stray trailing bits; only the canonical spelling of the bytes is accepted,
  // so every edited character of a protected value is detected
  if (!canonicalTail(value)) throw new ValueError('PROTECTED_VALUE_INVALID', 'is not canonical base64url');
  const bytes = new Uint8Array(Buffer.from(value, 'base64url'));
  if (bytes.length < HEADER_BYTES + minPayload || bytes[0] !== tag) {
    throw new ValueError('PROTECTED_VALUE_INVALID', 'is not an output of this transformer');
  }
  const version = ((bytes[1]! << 24) | (bytes[2]! << 16) | (bytes[3]! << 8) | bytes[4]!) >>> 0;
  return { version, header: bytes.subarray(0, HEADER_BYTES), payload: bytes.subarray(HEADER_BYTES) };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** UTF-8 of a value; a lone surrogate cannot round-trip, so it is refused. */
export function utf8(value: string): Uint8Array {
  if (!value.isWellFormed()) throw new ValueError('VALUE_NOT_IN_ALPHABET', 'is not well-formed Unicode (lone surrogate)');
  return encoder.encode(value);
}

/** UTF-8 byte length of a value, refusing lone surrogates like utf8(). */
export function utf8Length(value: string): number {
  if (!value.isWellFormed()) throw new ValueError('VALUE_NOT_IN_ALPHABET', 'is not well-formed Unicode (lone surrogate)');
  return Buffer.byteLength(value, 'utf8');
}

export function fromUtf8(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new ValueError('PROTECTED_VALUE_INVALID', 'does not decrypt to UTF-8 text');
  }
}

/**
 * The batch form of the keyed transformers: each value's UTF-8 length (a lone surrogate is that
 * value's ValueError), its output buffer and seal job from `prepare`, one `sealAll` over the jobs,
 * then each output as base64url text.
 */
export function sealEach<S>(
  values: readonly string[],
  prepare: (value: string, length: number) => { out: Buffer; job: S },
  sealAll: (jobs: S[]) => void,
): (string | ValueError)[] {
  const results = new Array<Buffer | ValueError>(values.length);
  const jobs: S[] = [];
  values.forEach((value, i) => {
    let length: number;
    try {
      length = utf8Length(value);
    } catch (e) {
      if (!(e instanceof ValueError)) throw e;
      results[i] = e;
      return;
    }
    const { out, job } = prepare(value, length);
    jobs.push(job);
    results[i] = out;
  });
  sealAll(jobs);
  return results.map((r) => (r instanceof ValueError ? r : encode(r)));
}

/**
 * The batch form of the keyed transformers' unprotect: each value decoded (a malformed one is that
 * value's ValueError, as decode() throws it), the values naming one key version opened together
 * by `openAll` under `keyOf(version)` (a ValueError from it — a version the key lacks — is each of
 * those values' error), each plaintext read as UTF-8, and one that did not authenticate refused as
 * unprotect() refuses it. Any other error throws, as it would from unprotect().
 */
export function openEach<K>(
  values: readonly string[],
  format: { tag: number; minPayload: number },
  keyOf: (version: number) => K,
  openAll: (key: K, version: number, payloads: Uint8Array[]) => (Uint8Array | undefined)[],
): (string | ValueError)[] {
  const out = new Array<string | ValueError>(values.length);
  const byVersion = new Map<number, { at: number; payload: Uint8Array }[]>();
  values.forEach((value, at) => {
    const decoded = valueErrorOr(() => decode(value, format.tag, format.minPayload));
    if (decoded instanceof ValueError) {
      out[at] = decoded;
      return;
    }
    const group = byVersion.get(decoded.version);
    if (group) group.push({ at, payload: decoded.payload });
    else byVersion.set(decoded.version, [{ at, payload: decoded.payload }]);
  });
  for (const [version, items] of byVersion) {
    const key = valueErrorOr(() => keyOf(version));
    if (key instanceof ValueError) {
      for (const { at } of items) out[at] = key;
      continue;
    }
    const plaintexts = openAll(
      key,
      version,
      items.map((it) => it.payload),
    );
    items.forEach(({ at }, k) => {
      const plaintext = plaintexts[k];
      out[at] = plaintext ? valueErrorOr(() => fromUtf8(plaintext)) : new ValueError('PROTECTED_VALUE_INVALID', AUTHENTICATION_FAILED);
    });
  }
  return out;
}

/** what unprotect says of a value that does not authenticate */
export const AUTHENTICATION_FAILED = 'fails authentication (tampered, or protected for another field or key)';

/** run's result, or the ValueError it throws; any other error throws */
export function valueErrorOr<T>(run: () => T): T | ValueError {
  try {
    return run();
  } catch (e) {
    if (e instanceof ValueError) return e;
    throw e;
  }
}

export function irreversible(type: string): never {
  throw new ValueError('ACTION_NOT_CONFIGURED', `${type} is irreversible and cannot unprotect`);
}
