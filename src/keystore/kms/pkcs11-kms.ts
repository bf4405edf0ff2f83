import { randomBytes } from 'node:crypto';
import pkcs11js from 'pkcs11js';
import { abortedCall, KmsError, type Kms, type KmsCallOptions } from './kms.ts';

export interface Pkcs11KmsOptions {
  /** the PKCS#11 module, e.g. /usr/lib/softhsm/libsofthsm2.so */
  library: string;
  tokenLabel: string;
  /** the user PIN (from a secret, never logged) */
  pin: string;
  /** CKA_LABEL of the AES key in the token that is the KEK */
  keyLabel: string;
  /** per encrypt or decrypt (default 3 s): a token that does not answer in time fails the call, retriable */
  timeoutMs?: number;
}

/** A logged-in session and the KEK's handle in it. */
interface Session {
  session: Buffer;
  key: Buffer;
}

const FORMAT = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** the token or session is gone (a restarted HSM, a pulled device): reopen and retry later */
const GONE = new Set([
  'CKR_DEVICE_ERROR',
  'CKR_DEVICE_REMOVED',
  'CKR_TOKEN_NOT_PRESENT',
  'CKR_SESSION_HANDLE_INVALID',
  'CKR_SESSION_CLOSED',
  'CKR_CRYPTOKI_NOT_INITIALIZED',
  'CKR_DEVICE_MEMORY',
]);

/**
 * The KEK as an AES key inside an HSM, through PKCS#11 (pkcs11js): AES-GCM in the token with a
 * fresh 96-bit IV and the context as additional data; the key never leaves the token. Wrapped
 * form: format byte 1, IV, ciphertext and tag. One logged-in session, reopened after the token
 * went away. A failed GCM tag is CKR_GENERAL_ERROR in SoftHSM2 (other tokens:
 * CKR_ENCRYPTED_DATA_INVALID): a refusal. One instance per module and process: PKCS#11 logins
 * and C_Finalize are the process's.
 *
 * The encrypt and decrypt run off the event loop (pkcs11js' async calls), one at a time (a
 * session runs one operation), each bounded by `timeoutMs` and the caller's abort signal: a
 * token that hangs fails the call (KMS_UNAVAILABLE) rather than hold it and every call behind it;
 * its session is dropped for a new one, and closed once the hung call ends, if it ever does.
 * Opening a session and initialising an operation stay synchronous calls of the binding.
 * `binding` is for tests (a token that never answers).
 */
export function pkcs11Kms(options: Pkcs11KmsOptions, binding: pkcs11js.PKCS11 = new pkcs11js.PKCS11()): Kms {
  return new Pkcs11Kek(options, binding);
}

class Pkcs11Kek implements Kms {
  readonly description: string;
  private readonly options: Pkcs11KmsOptions;
  private readonly p11: pkcs11js.PKCS11;
  private readonly timeoutMs: number;
  private open?: Session;
  private initialized = false;
  /** the operation in flight, the next one chained behind it */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: Pkcs11KmsOptions, p11: pkcs11js.PKCS11) {
    this.options = options;
    this.p11 = p11;
    this.timeoutMs = options.timeoutMs ?? 3_000;
    this.description = `PKCS#11 token ${options.tokenLabel}, key ${options.keyLabel}`;
    p11.load(options.library);
  }

  async wrap(plaintext: Uint8Array, context: string, o?: KmsCallOptions): Promise<Uint8Array> {
    const iv = randomBytes(IV_BYTES);
    const sealed = await this.call(
      'encrypt',
      o?.signal,
      ({ session, key }) => this.p11.C_EncryptInit(session, gcm(iv, context), key),
      ({ session }) => this.p11.C_EncryptAsync(session, Buffer.from(plaintext), Buffer.alloc(plaintext.length + TAG_BYTES)),
    );
    return Buffer.concat([Buffer.from([FORMAT]), iv, sealed]);
  }

  /** C_DestroyObject on the key: the token forgets it (the `pendingDays` of a KMS do not apply). */
  async destroy(): Promise<string> {
    const { session, key } = this.connect();
    try {
      this.p11.C_DestroyObject(session, key);
    } catch (e) {
      throw this.failure('DestroyObject', e);
    }
    this.open = undefined;
    return `PKCS#11 token ${this.options.tokenLabel}: key ${this.options.keyLabel} destroyed`;
  }

  async unwrap(wrapped: Uint8Array, context: string, o?: KmsCallOptions): Promise<Uint8Array> {
    if (wrapped.length < 1 + IV_BYTES + TAG_BYTES || wrapped[0] !== FORMAT)
      throw new KmsError('KMS_REFUSED', `PKCS#11 token ${this.options.tokenLabel}: the wrapped key is not in the PKCS#11 wrap format`);
    const iv = Buffer.from(wrapped.subarray(1, 1 + IV_BYTES));
    const sealed = Buffer.from(wrapped.subarray(1 + IV_BYTES));
    return this.call(
      'decrypt',
      o?.signal,
      ({ session, key }) => this.p11.C_DecryptInit(session, gcm(iv, context), key),
      ({ session }) => this.p11.C_DecryptAsync(session, sealed, Buffer.alloc(sealed.length)),
    );
  }

  async close(): Promise<void> {
    if (this.open) {
      try {
        this.p11.C_Logout(this.open.session);
        this.p11.C_CloseSession(this.open.session);
      } catch {
        /* the token went away: nothing to close */
      }
      this.open = undefined;
    }
    if (this.initialized) {
      try {
        this.p11.C_Finalize();
      } catch {
        /* finalized already by another user of the module in this process */
      }
    }
    this.initialized = false;
  }

  /** `init` (synchronous) then `run` (off the event loop), one call at a time, bounded by the timeout and the caller's signal. */
  private call(op: string, signal: AbortSignal | undefined, init: (c: Session) => void, run: (c: Session) => Promise<Buffer>): Promise<Buffer> {
    const work = async (): Promise<Buffer> => {
      let c: Session;
      let pending: Promise<Buffer>;
      try {
        c = this.connect();
        init(c);
        pending = run(c);
      } catch (e) {
        throw this.failure(op, e);
      }
      return this.bounded(op, signal, c, pending);
    };
    const result = this.queue.then(work, work);
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** The call's answer, or KMS_UNAVAILABLE once the time is up or the signal aborts (its session then abandoned). */
  private async bounded(op: string, signal: AbortSignal | undefined, c: Session, pending: Promise<Buffer>): Promise<Buffer> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const stop = abortedCall(signal ? AbortSignal.any([timeout, signal]) : timeout, `PKCS#11 token ${this.options.tokenLabel}: ${op}`);
    let unanswered = false;
    try {
      return await Promise.race([
        pending,
        stop.promise.catch((e: unknown) => {
          unanswered = true;
          throw e;
        }),
      ]);
    } catch (e) {
      if (unanswered) this.abandon(c, pending);
      throw this.failure(op, e);
    } finally {
      stop.dispose();
    }
  }

  /** A session whose call did not answer: dropped now, closed once the call ends (its output wiped). */
  private abandon(c: Session, pending: Promise<Buffer>): void {
    if (this.open === c) this.open = undefined;
    void pending
      .then(
        (out) => out.fill(0),
        () => undefined,
      )
      .finally(() => {
        try {
          this.p11.C_CloseSession(c.session);
        } catch {
          /* the token went away with it */
        }
      });
  }

  /** What a failed PKCS#11 call means: the token gone (retriable) or a refusal. Names the token and key, never a PIN or key bytes. */
  private failure(op: string, e: unknown): KmsError {
    if (e instanceof KmsError) return e;
    const code = (e as Error).message.match(/CKR_[A-Z_]+/)?.[0] ?? 'an error';
    if (GONE.has(code)) {
      this.open = undefined;
      return new KmsError('KMS_UNAVAILABLE', `PKCS#11 token ${this.options.tokenLabel}: ${op} failed (${code})`, { cause: e });
    }
    return new KmsError('KMS_REFUSED', `PKCS#11 token ${this.options.tokenLabel}, key ${this.options.keyLabel}: ${op} failed (${code})`, { cause: e });
  }

  private connect(): Session {
    if (this.open) return this.open;
    this.initialize();
    const { p11, options } = this;
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
    p11.C_FindObjectsInit(session, [
      { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
      { type: pkcs11js.CKA_LABEL, value: options.keyLabel },
    ]);
    const [key] = p11.C_FindObjects(session, 2);
    p11.C_FindObjectsFinal(session);
    if (!key) {
      p11.C_CloseSession(session);
      throw new KmsError('KMS_REFUSED', `PKCS#11: token ${options.tokenLabel} holds no secret key labelled ${options.keyLabel}`);
    }
    this.open = { session, key };
    return this.open;
  }

  private initialize(): void {
    if (this.initialized) return;
    try {
      this.p11.C_Initialize();
    } catch (e) {
      // another user of the same module in this process initialized it: share it
      if (!/CKR_CRYPTOKI_ALREADY_INITIALIZED/.test((e as Error).message)) throw e;
    }
    this.initialized = true;
  }
}

function gcm(iv: Buffer, context: string) {
  return {
    mechanism: pkcs11js.CKM_AES_GCM,
    parameter: { type: pkcs11js.CK_PARAMS_AES_GCM_v240, iv, aad: Buffer.from(context, 'utf8'), ivBits: IV_BYTES * 8, tagBits: TAG_BYTES * 8 },
  };
}
