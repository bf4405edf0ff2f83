import { randomBytes } from 'node:crypto';
import { KEY_TYPES, MemoryKeyProvider, type CompiledConfig, type KeyInfo, type KeyProvider, type KeyType, type SecretKey } from '../engine/index.ts';

/**
 * A session's sandbox keystore: for every key a configuration references, random material made
 * in memory on first use (and as many versions as a pinned version needs). Never persisted, never
 * shown; protected values made with it cannot be unprotected by the service's live keys, so the
 * tester on sandbox keys reveals nothing that is stored anywhere.
 */
export class SandboxKeys implements KeyProvider {
  private readonly keys = new MemoryKeyProvider();
  private readonly createdAt: string;

  constructor(now: Date) {
    this.createdAt = now.toISOString();
  }

  /** Makes sure every key the configuration references exists here. */
  cover(config: CompiledConfig): void {
    for (const ref of config.keys.values()) {
      const type = ref.type as KeyType;
      const existing = this.keys.info(ref.id);
      if (existing && existing.type !== type) continue;
      let latest = existing ? Math.max(...existing.versions.map((v) => v.version)) : 0;
      const wanted = Math.max(1, ref.version ?? 1);
      while (latest < wanted) {
        const bytes = randomBytes(KEY_TYPES[type].sizes[0]);
        latest = this.keys.add(ref.id, type, bytes, this.createdAt);
        bytes.fill(0);
      }
    }
  }

  info(id: string): KeyInfo | undefined {
    return this.keys.info(id);
  }

  key(id: string, version: number): SecretKey | undefined {
    return this.keys.key(id, version);
  }
}
