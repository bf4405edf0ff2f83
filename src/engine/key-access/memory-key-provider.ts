import { KEY_TYPES, type KeyInfo, type KeyProvider, type KeyType } from './key-provider.ts';
import { SecretKey } from './secret-key.ts';

interface Entry {
  info: KeyInfo;
  material: Map<number, SecretKey>;
}

/** Keys held in memory: the engine's unit tests and the keystore's decrypted view use it. */
export class MemoryKeyProvider implements KeyProvider {
  private readonly entries = new Map<string, Entry>();

  info(id: string): KeyInfo | undefined {
    return this.entries.get(id)?.info;
  }

  key(id: string, version: number): SecretKey | undefined {
    return this.entries.get(id)?.material.get(version);
  }

  ids(): string[] {
    return [...this.entries.keys()].sort();
  }

  /** Adds a version (the next number, or `as` — above every existing one: a key set read back keeps its numbers) and makes it primary. */
  add(id: string, type: KeyType, bytes: Uint8Array, createdAt: string, origin: 'generated' | 'imported' = 'generated', as?: number): number {
    const sizes: readonly number[] = KEY_TYPES[type].sizes;
    if (!sizes.includes(bytes.length)) {
      throw new RangeError(`a ${type} key must be ${sizes.join(', ')} bytes, got ${bytes.length}`);
    }
    const existing = this.entries.get(id);
    if (existing && existing.info.type !== type) {
      throw new TypeError(`key ${id} is of type ${existing.info.type}, not ${type}`);
    }
    const highest = existing ? Math.max(...existing.info.versions.map((v) => v.version)) : 0;
    if (as !== undefined && !(Number.isSafeInteger(as) && as > highest)) throw new RangeError(`version ${as} of ${id} is not above version ${highest}`);
    const version = as ?? highest + 1;
    const versions = [...(existing?.info.versions ?? []), { version, createdAt, origin }];
    const material = existing?.material ?? new Map<number, SecretKey>();
    material.set(version, SecretKey.fromBytes(bytes));
    this.entries.set(id, { info: { id, type, primary: version, versions }, material });
    return version;
  }

  /**
   * Destroys versions of a key (never its primary): their material is forgotten, so nothing they
   * protected or wrapped opens under this key set any more — what shredding a rotated wrapping
   * key needs (issue 43). Version numbers are not reused: the next is still above the highest.
   */
  destroyVersions(id: string, versions: readonly number[]): void {
    const entry = this.entries.get(id);
    if (!entry) throw new RangeError(`no key ${id}`);
    if (versions.includes(entry.info.primary)) throw new RangeError(`version ${entry.info.primary} of ${id} is primary: rotate first`);
    for (const version of versions) entry.material.delete(version);
    entry.info = { ...entry.info, versions: entry.info.versions.filter((v) => !versions.includes(v.version)) };
  }
}
