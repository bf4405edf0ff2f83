import { revealKeyBytes, VeilError, type SecretKey } from '../engine/index.ts';
import { decodeKeystore, type KeyRecord } from './keystore-format.ts';
import { decodeEnvelope, isEnvelope } from './keyset-envelope.ts';
import { wipe } from './key-records.ts';
import type { Kms } from './kms/kms.ts';

/**
 * Whether a key-set document opens under this KEK (either format): false when it does not
 * (damaged, forged, another KEK's); a KEK that cannot answer now throws its retriable error.
 * The keys it holds are wiped, never kept.
 */
export async function opensUnder(document: Buffer, kek: { masterKey?: SecretKey; kms?: Kms }): Promise<boolean> {
  try {
    let records: KeyRecord[];
    if (isEnvelope(document)) {
      if (!kek.kms) return false;
      records = await decodeEnvelope(document, kek.kms, 'from the control store');
    } else {
      if (!kek.masterKey) return false;
      records = decodeKeystore(document, revealKeyBytes(kek.masterKey), 'from the control store');
    }
    wipe(records);
    return true;
  } catch (e) {
    if (e instanceof VeilError && !e.retriable) return false;
    throw e;
  }
}
