import { VeilError, type KeyProvider, type KeyType } from '../engine/index.ts';

/** What creating a key on first use needs of a key set: LocalKeystore. */
export interface KeyCreator<T extends KeyType = KeyType> extends KeyProvider {
  create(id: string, type: T): Promise<unknown>;
  reload(): Promise<void>;
}

/**
 * Creates key `id` of `type` when the key set lacks it; true when this call created it. Several
 * processes may share the key set (a data dir, the control store): one that loses the race to
 * create it reads the winner's key.
 */
export async function ensureKey<T extends KeyType>(keys: KeyCreator<T>, id: string, type: T): Promise<boolean> {
  if (keys.info(id)) return false;
  try {
    await keys.create(id, type);
    return true;
  } catch (e) {
    if (!(e instanceof VeilError && e.code === 'KEY_EXISTS')) throw e;
    await keys.reload();
    return false;
  }
}
