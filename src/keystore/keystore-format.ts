import { createCipheriv, createDecipheriv, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { VeilError, type KeyType } from '../engine/index.ts';
import { isKeyType, isValidKeyId, keySizes } from './key-material.ts';
import { KeystoreError } from './errors.ts';

/**
 * The keystore file, version 1. A JSON document in one canonical form (2-space indent, fixed key
 * order, trailing newline):
 *
 *   { format: "veil-keystore", version: 1, cipher: "aes-256-gcm",
 *     kdf: { name: "hkdf-sha256", salt: <32 bytes>, info: KDF_INFO },
 *     check: <16 bytes>, nonce: <12 bytes>, ciphertext: <AES-256-GCM ciphertext || 16-byte tag> }
 *
 * All binary fields are base64. The file key is HKDF-SHA256(master key, salt, KDF_INFO); salt
 * and nonce are fresh on every write. The header (every field but ciphertext, serialized
 * compactly in that order) is the AAD, and a file is accepted only if it is byte-for-byte the
 * canonical serialization of what it parses to — so a change anywhere (whitespace, escapes,
 * base64 padding bits, header values, ciphertext) fails loading. `check` is
 * HKDF(master key, salt, CHECK_INFO): it tells "wrong master key" from "file modified" in the
 * error message; it protects nothing (the GCM tag does).
 */
export const KEYSTORE_FORMAT = 'veil-keystore';
export const KEYSTORE_VERSION = 1;
const CIPHER = 'aes-256-gcm';
const KDF = 'hkdf-sha256';
const KDF_INFO = 'veil-keystore/1 file key';
const CHECK_INFO = 'veil-keystore/1 master key check';
const SALT_BYTES = 32;
const NONCE_BYTES = 12;
const CHECK_BYTES = 16;
const TAG_BYTES = 16;

export interface VersionRecord {
  version: number;
  createdAt: string;
  origin: 'generated' | 'imported';
  material: Uint8Array;
}

export interface KeyRecord {
  id: string;
  type: KeyType;
  primary: number;
  versions: VersionRecord[];
}

interface Header {
  format: string;
  version: number;
  cipher: string;
  kdf: { name: string; salt: string; info: string };
  check: string;
  nonce: string;
}

export function encodeKeystore(records: readonly KeyRecord[], masterKey: Uint8Array): Buffer {
  const salt = randomBytes(SALT_BYTES);
  const nonce = randomBytes(NONCE_BYTES);
  const header = makeHeader(salt, derive(masterKey, salt, CHECK_INFO, CHECK_BYTES), nonce);
  const plaintext = recordsToPlaintext(records);
  const fileKey = derive(masterKey, salt, KDF_INFO, 32);
  try {
    const cipher = createCipheriv(CIPHER, fileKey, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(JSON.stringify(header), 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    return Buffer.from(serialize(header, ciphertext.toString('base64')), 'utf8');
  } finally {
    fileKey.fill(0);
    plaintext.fill(0);
  }
}

/** Parses, authenticates and decrypts a keystore file; any defect is a KEYSTORE_INVALID. */
export function decodeKeystore(bytes: Uint8Array, masterKey: Uint8Array, path: string): KeyRecord[] {
  const damaged = (detail: string): VeilError =>
    new KeystoreError('KEYSTORE_INVALID', `keystore ${path} is not a valid veil keystore (${detail}): it was damaged or modified; restore it from a backup`);
  if (bytes.length === 0) throw damaged('the file is empty');
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw damaged('not UTF-8 JSON');
  }
  const file = readFileShape(parsed);
  if (!file) throw damaged('unexpected structure');
  if (file.header.format !== KEYSTORE_FORMAT) throw damaged('unknown format name');
  if (file.header.version !== KEYSTORE_VERSION) {
    throw damaged(`format version ${String(file.header.version)}; this veil reads version ${KEYSTORE_VERSION}`);
  }
  if (file.header.cipher !== CIPHER || file.header.kdf.name !== KDF || file.header.kdf.info !== KDF_INFO) {
    throw damaged('unknown cipher or key derivation');
  }
  if (!Buffer.from(serialize(file.header, file.ciphertext), 'utf8').equals(bytes)) throw damaged('not in canonical form');
  const salt = base64(file.header.kdf.salt, SALT_BYTES);
  const check = base64(file.header.check, CHECK_BYTES);
  const nonce = base64(file.header.nonce, NONCE_BYTES);
  const sealed = base64(file.ciphertext);
  if (!salt || !check || !nonce || !sealed || sealed.length < TAG_BYTES) throw damaged('malformed binary field');

  const fileKey = derive(masterKey, salt, KDF_INFO, 32);
  let plaintext: Buffer;
  try {
    const decipher = createDecipheriv(CIPHER, fileKey, nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(JSON.stringify(file.header), 'utf8'));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    plaintext = Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()]);
  } catch {
    const expected = derive(masterKey, salt, CHECK_INFO, CHECK_BYTES);
    if (!timingSafeEqual(expected, check)) {
      throw new KeystoreError(
        'KEYSTORE_INVALID',
        `keystore ${path} cannot be opened with this master key (check VEIL_MASTER_KEY or the master.key file), or it was modified`,
      );
    }
    throw new KeystoreError('KEYSTORE_INVALID', `keystore ${path} failed authentication: it was damaged or modified; restore it from a backup`);
  } finally {
    fileKey.fill(0);
  }
  try {
    const records = readRecords(JSON.parse(plaintext.toString('utf8')));
    if (!records) throw new Error('content');
    return records;
  } catch {
    throw new KeystoreError('KEYSTORE_INVALID', `keystore ${path} is authentic but its content is not understood by this veil version`);
  } finally {
    plaintext.fill(0);
  }
}

/** The key list as the JSON text both keystore formats encrypt (this file's, keyset-envelope.ts). */
export function recordsToPlaintext(records: readonly KeyRecord[]): Buffer {
  return Buffer.from(JSON.stringify({ keys: records.map(recordToJson) }), 'utf8');
}

/** The key list of a decrypted text, checked; undefined when anything is off. */
export function recordsFromPlaintext(plaintext: Buffer): KeyRecord[] | undefined {
  try {
    return readRecords(JSON.parse(plaintext.toString('utf8')));
  } catch {
    return undefined;
  }
}

function makeHeader(salt: Buffer, check: Buffer, nonce: Buffer): Header {
  return {
    format: KEYSTORE_FORMAT,
    version: KEYSTORE_VERSION,
    cipher: CIPHER,
    kdf: { name: KDF, salt: salt.toString('base64'), info: KDF_INFO },
    check: check.toString('base64'),
    nonce: nonce.toString('base64'),
  };
}

/** The canonical file text; fields are copied in a fixed order, whatever order they came in. */
function serialize(header: Header, ciphertext: string): string {
  const { format, version, cipher, kdf, check, nonce } = header;
  const file = { format, version, cipher, kdf: { name: kdf.name, salt: kdf.salt, info: kdf.info }, check, nonce, ciphertext };
  return `${JSON.stringify(file, null, 2)}\n`;
}

function derive(masterKey: Uint8Array, salt: Uint8Array, info: string, length: number): Buffer {
  return Buffer.from(hkdfSync('sha256', masterKey, salt, info, length));
}

/** Strict base64: only the canonical encoding of the bytes (and of the given length) is accepted. */
export function base64(text: string, length?: number): Buffer | undefined {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.toString('base64') !== text) return undefined;
  if (length !== undefined && bytes.length !== length) return undefined;
  return bytes;
}

function isObject(value: unknown, keys: readonly string[]): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const own = Object.keys(value);
  return own.length === keys.length && keys.every((key) => own.includes(key));
}

function readFileShape(value: unknown): { header: Header; ciphertext: string } | undefined {
  if (!isObject(value, ['format', 'version', 'cipher', 'kdf', 'check', 'nonce', 'ciphertext'])) return undefined;
  const { format, version, cipher, kdf, check, nonce, ciphertext } = value;
  if (!isObject(kdf, ['name', 'salt', 'info'])) return undefined;
  const strings = [format, cipher, kdf.name, kdf.salt, kdf.info, check, nonce, ciphertext];
  if (!strings.every((s) => typeof s === 'string') || typeof version !== 'number') return undefined;
  const header = {
    format: format as string,
    version,
    cipher: cipher as string,
    kdf: { name: kdf.name as string, salt: kdf.salt as string, info: kdf.info as string },
    check: check as string,
    nonce: nonce as string,
  };
  return { header, ciphertext: ciphertext as string };
}

function recordToJson(record: KeyRecord): unknown {
  return {
    id: record.id,
    type: record.type,
    primary: record.primary,
    versions: record.versions.map((v) => ({
      version: v.version,
      createdAt: v.createdAt,
      origin: v.origin,
      material: Buffer.from(v.material).toString('base64'),
    })),
  };
}

/** The decrypted key list, checked; undefined when anything is off. */
function readRecords(value: unknown): KeyRecord[] | undefined {
  if (!isObject(value, ['keys']) || !Array.isArray(value.keys)) return undefined;
  const records: KeyRecord[] = [];
  const seen = new Set<string>();
  for (const key of value.keys as unknown[]) {
    if (!isObject(key, ['id', 'type', 'primary', 'versions'])) return undefined;
    const { id, type, primary, versions } = key;
    if (typeof id !== 'string' || !isValidKeyId(id) || seen.has(id)) return undefined;
    if (typeof type !== 'string' || !isKeyType(type) || !Array.isArray(versions) || versions.length === 0) return undefined;
    seen.add(id);
    const record: KeyRecord = { id, type, primary: primary as number, versions: [] };
    // versions rise; a destroyed one (destroyOlderVersions) leaves a gap; the primary is the newest
    let previous = 0;
    for (const entry of versions as unknown[]) {
      if (!isObject(entry, ['version', 'createdAt', 'origin', 'material'])) return undefined;
      const { version, createdAt, origin, material } = entry;
      if (typeof version !== 'number' || !Number.isSafeInteger(version) || version <= previous || typeof createdAt !== 'string' || typeof material !== 'string')
        return undefined;
      previous = version;
      if (origin !== 'generated' && origin !== 'imported') return undefined;
      const bytes = base64(material);
      if (!bytes || !keySizes(type).includes(bytes.length)) return undefined;
      record.versions.push({ version, createdAt, origin, material: Uint8Array.from(bytes) });
      bytes.fill(0);
    }
    if (primary !== previous) return undefined;
    records.push(record);
  }
  return records;
}
