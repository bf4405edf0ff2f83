import { randomBytes } from 'node:crypto';
import pkcs11js from 'pkcs11js';
import { KmsError, type Kms } from './kms.ts';

export interface Pkcs11KmsOptions {
  /** the PKCS#11 module, e.g. /usr/lib/softhsm/libsofthsm2.so */
  library: string;
  tokenLabel: string;
  /** the user PIN (from a secret, never logged) */
  pin: string;
  /** CKA_LABEL of the AES key in the token that is the KEK */
  keyLabel: string;
}

const FORMAT = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** the token or session is gone (a restarted HSM, a pulled device): reopen and retry later */
const GONE = new Set(['CKR_DEVICE_ERROR', 'CKR_DEVICE_REMOVED', 'CKR_TOKEN_NOT_PRESENT', 'CKR_SESSION_HANDLE_INVALID', 'CKR_SESSION_CLOSED', 'CKR_CRYPTOKI_NOT_INITIALIZED', 'CKR_DEVICE_MEMORY']);

/**
 * The KEK as an AES key inside an HSM, through PKCS#11 (pkcs11js): AES-GCM in the token with a
 * fresh 96-bit IV and the context as additional data; the key never leaves the token. Wrapped
 * form: format byte 1, IV, ciphertext and tag. One logged-in session, reopened after the token
 * went away; calls are synchronous in the binding and serialized by the event loop. A failed GCM
 * tag is CKR_GENERAL_ERROR in SoftHSM2 (other tokens: CKR_ENCRYPTED_DATA_INVALID): a refusal.
 * One instance per module and process: PKCS#11 logins and C_Finalize are the process's.
 */
export function pkcs11Kms(options: Pkcs11KmsOptions): Kms {
  const p11 = new pkcs11js.PKCS11();
  p11.load(options.library);
  let open: { session: Buffer; key: Buffer } | undefined;
  let initialized = false;

  const connect = (): { session: Buffer; key: Buffer } => {
    if (open) return open;
    if (!initialized) {
      try {
        p11.C_Initialize();
      } catch (e) {
        // another user of the same module in this process initialized it: share it
        if (!/CKR_CRYPTOKI_ALREADY_INITIALIZED/.test((e as Error).message)) throw e;
      }
      initialized = true;
    }
    const slot = p11.C_GetSlotList(true).find((s) => p11.C_GetTokenInfo(s).label.trim() === options.tokenLabel);
    if (!slot) throw new KmsError('KMS_UNAVAILABLE', `PKCS#11: no token labelled ${options.tokenLabel} is present`);
    const session = p11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
    try {
      p11.C_Login(session, pkcs11js.CKU_USER, options.pin);
    } catch (e) {
      // a login is the application's, on every session of the token: another session of this
      // process logged in already (PKCS#11 then checks no PIN: one PIN per token and process)
      if (!/CKR_USER_ALREADY_LOGGED_IN/.test((e as Error).message)) {
        p11.C_CloseSession(session);
        throw e;
      }
    }
    p11.C_FindObjectsInit(session, [{ type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY }, { type: pkcs11js.CKA_LABEL, value: options.keyLabel }]);
    const [key] = p11.C_FindObjects(session, 2);
    p11.C_FindObjectsFinal(session);
    if (!key) {
      p11.C_CloseSession(session);
      throw new KmsError('KMS_REFUSED', `PKCS#11: token ${options.tokenLabel} holds no secret key labelled ${options.keyLabel}`);
    }
    open = { session, key };
    return open;
  };

  const call = <T>(op: string, run: (c: { session: Buffer; key: Buffer }) => T): T => {
    try {
      return run(connect());
    } catch (e) {
      if (e instanceof KmsError) throw e;
      const code = (e as Error).message.match(/CKR_[A-Z_]+/)?.[0] ?? 'an error';
      if (GONE.has(code)) {
        open = undefined;
        throw new KmsError('KMS_UNAVAILABLE', `PKCS#11 token ${options.tokenLabel}: ${op} failed (${code})`, { cause: e });
      }
      throw new KmsError('KMS_REFUSED', `PKCS#11 token ${options.tokenLabel}, key ${options.keyLabel}: ${op} failed (${code})`, { cause: e });
    }
  };
  const gcm = (iv: Buffer, context: string) => ({
    mechanism: pkcs11js.CKM_AES_GCM,
    parameter: { type: pkcs11js.CK_PARAMS_AES_GCM_v240, iv, aad: Buffer.from(context, 'utf8'), ivBits: IV_BYTES * 8, tagBits: TAG_BYTES * 8 },
  });

  return {
    description: `PKCS#11 token ${options.tokenLabel}, key ${options.keyLabel}`,
    async wrap(plaintext, context) {
      const iv = randomBytes(IV_BYTES);
      const sealed = call('encrypt', ({ session, key }) => {
        p11.C_EncryptInit(session, gcm(iv, context), key);
        return p11.C_Encrypt(session, Buffer.from(plaintext), Buffer.alloc(plaintext.length + TAG_BYTES));
      });
      return Buffer.concat([Buffer.from([FORMAT]), iv, sealed]);
    },
    async unwrap(wrapped, context) {
      if (wrapped.length < 1 + IV_BYTES + TAG_BYTES || wrapped[0] !== FORMAT) throw new KmsError('KMS_REFUSED', `PKCS#11 token ${options.tokenLabel}: the wrapped key is not in the PKCS#11 wrap format`);
      const iv = Buffer.from(wrapped.subarray(1, 1 + IV_BYTES));
      const sealed = Buffer.from(wrapped.subarray(1 + IV_BYTES));
      return call('decrypt', ({ session, key }) => {
        p11.C_DecryptInit(session, gcm(iv, context), key);
        return p11.C_Decrypt(session, sealed, Buffer.alloc(sealed.length));
      });
    },
    async close() {
      if (open) {
        try {
          p11.C_Logout(open.session);
          p11.C_CloseSession(open.session);
        } catch { /* the token went away: nothing to close */ }
        open = undefined;
      }
      if (initialized) {
        try {
          p11.C_Finalize();
        } catch { /* finalized already by another user of the module in this process */ }
      }
      initialized = false;
    },
  };
}
