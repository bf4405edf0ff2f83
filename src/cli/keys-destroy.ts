import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KeystoreError } from '../keystore/errors.ts';
import { bareKekFromEnv, opensUnder } from '../keystore/index.ts';
import { CliFault } from './errors.ts';
import type { CliIo } from './io.ts';

/** AWS KMS's bounds on a deletion's waiting period */
const PENDING_DAYS = { min: 7, max: 30, default: 7 };

/**
 * `veil keys destroy-kek`: destroys the KEK the environment names (VEIL_KMS: AWS KMS schedules
 * the key's deletion, PKCS#11 destroys the key object) — the last step of shredding backups
 * (docs/erasure.md, "Backups"): every key-set version ever wrapped by it, in a backup or in the
 * control topic's history, stops opening. Refused while the data dir's key set still opens under
 * it (`veil keys rewrap` to the new KEK first: destroying it then would lose every key). A master
 * key is not destroyed by veil: remove it from wherever it is kept.
 */
export async function destroyKek(dataDir: string, pendingDaysText: string | undefined, io: CliIo): Promise<number> {
  const pendingDays = Number(pendingDaysText ?? PENDING_DAYS.default);
  if (!Number.isInteger(pendingDays) || pendingDays < PENDING_DAYS.min || pendingDays > PENDING_DAYS.max)
    throw new CliFault('USAGE', `--pending-days must be a whole number from ${PENDING_DAYS.min} to ${PENDING_DAYS.max}`);
  const kek = await bareKekFromEnv(io.env);
  if (!kek?.destroy)
    throw new CliFault('USAGE', 'destroy-kek destroys the KEK VEIL_KMS names (aws-kms or pkcs11); a master key is removed by you, from wherever it is kept');
  try {
    const document = await readFile(join(dataDir, 'keystore.json')).catch(() => {
      throw new KeystoreError(
        'KEYSTORE_INVALID',
        `no key set in ${dataDir}: run destroy-kek with the data dir that holds the current key set (the one veil keys rewrap wrote)`,
      );
    });
    if (await opensUnder(document, { kms: kek })) {
      throw new KeystoreError(
        'KEYSTORE_INVALID',
        `the key set in ${dataDir} is still wrapped by ${kek.description}: run veil keys rewrap to the new KEK first — destroying this one now would lose every key`,
      );
    }
    io.stdout(`${await kek.destroy({ pendingDays })}\n`);
    return 0;
  } finally {
    await kek.close?.();
  }
}
