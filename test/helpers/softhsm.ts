import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pkcs11js from 'pkcs11js';

const exec = promisify(execFile);

/** Debian's softhsm2 module; .ci/run installs the package. */
export const SOFTHSM_LIBRARY =
  ['/usr/lib/softhsm/libsofthsm2.so', '/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so'].find((p) => existsSync(p)) ?? '/usr/lib/softhsm/libsofthsm2.so';

export interface SoftHsm {
  library: string;
  tokenLabel: string;
  pin: string;
  /** generates a non-extractable AES-256 key in the token under `label` */
  createAesKey(label: string): void;
  /** removes the token's files: the token is gone (an HSM unreachable) */
  dispose(): Promise<void>;
}

/**
 * A fresh SoftHSM2 token in a temporary token directory, for this process: SOFTHSM2_CONF is set
 * here, before any PKCS#11 module in the process initializes.
 */
export async function softHsmToken(tokenLabel = 'veil-test'): Promise<SoftHsm> {
  const dir = await mkdtemp(join(tmpdir(), 'veil-softhsm-'));
  await mkdir(join(dir, 'tokens'));
  const conf = join(dir, 'softhsm2.conf');
  await writeFile(conf, `directories.tokendir = ${join(dir, 'tokens')}\nobjectstore.backend = file\nlog.level = ERROR\n`);
  process.env.SOFTHSM2_CONF = conf;
  const pin = '246810';
  await exec('softhsm2-util', ['--init-token', '--free', '--label', tokenLabel, '--pin', pin, '--so-pin', '13579'], {
    env: { ...process.env, SOFTHSM2_CONF: conf },
  });
  return {
    library: SOFTHSM_LIBRARY,
    tokenLabel,
    pin,
    createAesKey(label: string) {
      const p11 = new pkcs11js.PKCS11();
      p11.load(SOFTHSM_LIBRARY);
      p11.C_Initialize();
      try {
        const slot = p11.C_GetSlotList(true).find((s) => p11.C_GetTokenInfo(s).label.trim() === tokenLabel)!;
        const session = p11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
        p11.C_Login(session, pkcs11js.CKU_USER, pin);
        p11.C_GenerateKey(session, { mechanism: pkcs11js.CKM_AES_KEY_GEN }, [
          { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
          { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_AES },
          { type: pkcs11js.CKA_LABEL, value: label },
          { type: pkcs11js.CKA_TOKEN, value: true },
          { type: pkcs11js.CKA_VALUE_LEN, value: 32 },
          { type: pkcs11js.CKA_ENCRYPT, value: true },
          { type: pkcs11js.CKA_DECRYPT, value: true },
          { type: pkcs11js.CKA_SENSITIVE, value: true },
          { type: pkcs11js.CKA_EXTRACTABLE, value: false },
        ]);
        p11.C_Logout(session);
        p11.C_CloseSession(session);
      } finally {
        p11.C_Finalize();
      }
    },
    async dispose() {
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** the environment that points a veil process's PKCS#11 KEK adapter at this token's key `label` */
export function pkcs11Env(hsm: SoftHsm, label: string): Record<string, string> {
  return {
    VEIL_KMS: 'pkcs11',
    VEIL_PKCS11_MODULE: hsm.library,
    VEIL_PKCS11_TOKEN: hsm.tokenLabel,
    VEIL_PKCS11_PIN: hsm.pin,
    VEIL_PKCS11_KEY_LABEL: label,
    SOFTHSM2_CONF: process.env.SOFTHSM2_CONF!,
  };
}
