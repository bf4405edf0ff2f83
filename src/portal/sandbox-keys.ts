import { hkdfSync, randomBytes } from 'node:crypto';
import { KEY_TYPES, SecretKey, type CompiledConfig, type KeyInfo, type KeyProvider, type KeyType } from '../engine/index.ts';

/** Derived keys kept at once; more are derived again when needed. */
const CACHE = 256;
const CREATED_AT = '1970-01-01T00:00:00.000Z';

/**
 * A session's sandbox keystore: for every key a configuration references, material derived on
 * demand from a random seed (HKDF-SHA256 over the key id, type and version), only for the versions
 * a call uses. A pinned `version: 60000` therefore costs one derivation, not 60,000 keys. Never
 * persisted, never shown; values protected with it cannot be unprotected by the service's live
 * keys, so the tester on sandbox keys reveals nothing that is stored anywhere.
 */
export class SandboxKeys implements KeyProvider {
  /** 32 random bytes: every key of this sandbox follows from it */
  readonly seed: Uint8Array;
  private readonly refs = new Map<string, { type: KeyType; latest: number; pinned: Set<number> }>();
  private readonly cache = new Map<string, SecretKey>();

  constructor(seed: Uint8Array = randomBytes(32)) {
    this.seed = seed;
  }

  /** Makes every key the configuration references available: its type and highest version, no material yet. */
  cover(config: CompiledConfig): void {
    for (const ref of config.keys.values()) {
      const type = ref.type as KeyType;
      const existing = this.refs.get(ref.id);
      if (existing && existing.type !== type) continue;
      const entry = existing ?? { type, latest: 1, pinned: new Set<number>() };
      entry.latest = Math.max(entry.latest, ref.version ?? 1);
      if (ref.version !== undefined) entry.pinned.add(ref.version);
      this.refs.set(ref.id, entry);
    }
  }

  info(id: string): KeyInfo | undefined {
    const entry = this.refs.get(id);
    if (!entry) return undefined;
    // the versions a configuration names and the primary: never a list as long as the version number
    const versions = [...new Set([...entry.pinned, entry.latest])]
      .sort((a, b) => a - b)
      .map((version) => ({ version, createdAt: CREATED_AT, origin: 'generated' as const }));
    return { id, type: entry.type, primary: entry.latest, versions };
  }

  key(id: string, version: number): SecretKey | undefined {
    const entry = this.refs.get(id);
    if (!entry || !Number.isInteger(version) || version < 1 || version > entry.latest) return undefined;
    const name = `${id}\u0000${entry.type}\u0000${version}`;
    let key = this.cache.get(name);
    if (!key) {
      const bytes = Buffer.from(hkdfSync('sha256', this.seed, Buffer.alloc(0), `veil/sandbox\u0000${name}`, KEY_TYPES[entry.type].sizes[0]));
      key = SecretKey.fromBytes(bytes);
      bytes.fill(0);
      if (this.cache.size >= CACHE) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(name, key);
    }
    return key;
  }
}
