import { randomBytes } from 'node:crypto';
import { MemoryKeyProvider, revealKeyBytes, type KeyInfo, type KeyType, type SecretKey } from '../engine/index.ts';
import { isKeyType, isValidKeyId, keySizes } from './key-material.ts';
import type { KeyRecord } from './keystore-format.ts';

/** The keystore's conversions between decoded records and the in-memory view, and its argument checks. */
export function assertKeyId(id: string): void {
  if (typeof id !== 'string' || !isValidKeyId(id)) {
    throw new RangeError('a key id has 1 to 64 characters a-z, 0-9, ".", "_", "-" and starts with a letter or digit');
  }
}

export function assertKeyType(type: string): void {
  if (typeof type !== 'string' || !isKeyType(type)) throw new RangeError('unknown key type');
}

export function addRandom(keys: MemoryKeyProvider, id: string, type: KeyType, createdAt: string): void {
  const size = keySizes(type)[0] as number;
  const bytes = randomBytes(size);
  try {
    keys.add(id, type, bytes, createdAt, 'generated');
  } finally {
    bytes.fill(0);
  }
}

export function toProvider(records: readonly KeyRecord[]): MemoryKeyProvider {
  const keys = new MemoryKeyProvider();
  for (const record of records) {
    for (const version of record.versions) keys.add(record.id, record.type, version.material, version.createdAt, version.origin, version.version);
  }
  return keys;
}

export function toRecords(keys: MemoryKeyProvider): KeyRecord[] {
  return keys.ids().map((id) => {
    const info = keys.info(id) as KeyInfo;
    const versions = info.versions.map((v) => ({
      ...v,
      material: Uint8Array.from(revealKeyBytes(keys.key(id, v.version) as SecretKey)),
    }));
    return { id, type: info.type, primary: info.primary, versions };
  });
}

export function wipe(records: readonly KeyRecord[]): void {
  for (const record of records) for (const version of record.versions) version.material.fill(0);
}

export function copyInfo(info: KeyInfo): KeyInfo {
  return { id: info.id, type: info.type, primary: info.primary, versions: info.versions.map((v) => ({ ...v })) };
}
