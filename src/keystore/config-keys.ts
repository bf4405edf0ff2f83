import { VeilError, type CompiledConfig, type KeyProvider, type KeyType } from '../engine/index.ts';
import { ensureKey } from './ensure-key.ts';
import type { LocalKeystore } from './local-keystore.ts';

/** What the configuration's key references need from the keystore and it lacks. */
export interface KeyGap {
  ref: string;
  id: string;
  type: KeyType;
  problem: 'missing' | 'type' | 'version';
  message: string;
}

export function findKeyGaps(config: CompiledConfig, keys: KeyProvider): KeyGap[] {
  const gaps: KeyGap[] = [];
  for (const ref of config.keys.values()) {
    const type = ref.type as KeyType;
    const info = keys.info(ref.id);
    const base = { ref: ref.name, id: ref.id, type };
    if (!info) gaps.push({ ...base, problem: 'missing', message: `key ${ref.id} (reference ${ref.name}, ${type}) is not in the keystore` });
    else if (info.type !== type)
      gaps.push({ ...base, problem: 'type', message: `key ${ref.id} is ${info.type} in the keystore, the configuration says ${type}` });
    else if (ref.version !== undefined && !info.versions.some((v) => v.version === ref.version)) {
      gaps.push({ ...base, problem: 'version', message: `key ${ref.id} has no version ${ref.version} (reference ${ref.name} pins it)` });
    }
  }
  return gaps;
}

/** Fails with KEY_UNAVAILABLE when the keystore cannot serve the configuration. */
export function requireKeys(config: CompiledConfig, keys: KeyProvider): void {
  const gaps = findKeyGaps(config, keys);
  if (gaps.length) {
    throw new VeilError(
      'KEY_UNAVAILABLE',
      `the keystore cannot serve the configuration:\n${gaps.map((g) => g.message).join('\n')}\n(create them with 'veil keys create' or 'veil config provision')`,
    );
  }
}

/** Creates the keys the configuration references and the keystore lacks. Refuses type clashes. */
export async function provisionKeys(config: CompiledConfig, keystore: LocalKeystore): Promise<string[]> {
  const created: string[] = [];
  for (const gap of findKeyGaps(config, keystore)) {
    if (gap.problem !== 'missing' || created.includes(gap.id)) {
      if (gap.problem !== 'missing') throw new VeilError('KEY_UNAVAILABLE', gap.message);
      continue;
    }
    if (await ensureKey(keystore, gap.id, gap.type)) created.push(gap.id);
  }
  const rest = findKeyGaps(config, keystore);
  if (rest.length) throw new VeilError('KEY_UNAVAILABLE', rest.map((g) => g.message).join('\n'));
  return created;
}
