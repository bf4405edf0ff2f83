import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pkcs11js from 'pkcs11js';
import { awsKms } from '../../../src/keystore/kms/aws-kms.ts';
import { cachingKms, meteredKms, retryingKms } from '../../../src/keystore/kms/kms-decorators.ts';
import { KmsError, type Kms, type KmsCallOptions } from '../../../src/keystore/kms/kms.ts';
import { pkcs11Kms } from '../../../src/keystore/kms/pkcs11-kms.ts';

/** A KMS that fails (retriably) or hangs, recording the signal each call got. */
function recording(mode: 'fail' | 'hang') {
  const k = {
    description: 'recording',
    calls: 0,
    signals: [] as (AbortSignal | undefined)[],
    wrap: async (p: Uint8Array) => p,
    unwrap(_w: Uint8Array, _c: string, o?: KmsCallOptions): Promise<Uint8Array> {
      k.calls++;
      k.signals.push(o?.signal);
      return mode === 'fail' ? Promise.reject(new KmsError('KMS_UNAVAILABLE', 'down')) : new Promise(() => undefined);
    },
  };
  return k satisfies Kms;
}

const elapsed = async (run: () => Promise<unknown>) => {
  const started = performance.now();
  const outcome = await run().then(
    () => 'resolved',
    (e: unknown) => e,
  );
  return { outcome, ms: performance.now() - started };
};

describe('a KMS call ends when its signal aborts (a lease renewal bounded by its interval)', () => {
  it('retryingKms: the signal reaches each attempt, and an abort during the backoff ends the retrying with the last error', async () => {
    const inner = recording('fail');
    const kms = retryingKms(inner, { attempts: 10, sleep: () => new Promise(() => undefined) });
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 50);
    const { outcome, ms } = await elapsed(() => kms.unwrap(new Uint8Array(1), 'c', { signal: abort.signal }));
    expect(outcome).toMatchObject({ code: 'KMS_UNAVAILABLE', retriable: true });
    expect(ms).toBeLessThan(1_000);
    expect(inner.calls).toBe(1);
    expect(inner.signals[0]).toBe(abort.signal);
  });

  it('retryingKms: no attempt after the signal aborted', async () => {
    const inner = recording('fail');
    const abort = new AbortController();
    abort.abort();
    await expect(
      retryingKms(inner, { attempts: 5, sleep: async () => undefined }).unwrap(new Uint8Array(1), 'c', { signal: abort.signal }),
    ).rejects.toMatchObject({ code: 'KMS_UNAVAILABLE' });
    expect(inner.calls).toBe(1);
  });

  it('cachingKms and meteredKms hand the signal to the KMS', async () => {
    const inner = recording('fail');
    const signal = new AbortController().signal;
    const kms = cachingKms(meteredKms(inner, { call: () => undefined }), { ttlMs: 1_000 });
    await expect(kms.unwrap(new Uint8Array(1), 'c', { signal })).rejects.toBeInstanceOf(KmsError);
    expect(inner.signals).toEqual([signal]);
  });

  describe('AWS KMS adapter against an endpoint that accepts and never answers', () => {
    let server: Server;
    const sockets: Socket[] = [];
    let endpoint: string;
    beforeAll(async () => {
      server = createServer((s) => void sockets.push(s));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    });
    afterAll(async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    });

    it('an aborted Decrypt rejects at once, retriable KMS_UNAVAILABLE; without a signal its own timeout ends it', async () => {
      const kms = awsKms({
        keyId: 'alias/veil',
        region: 'eu-west-1',
        endpoint,
        credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
        timeoutMs: 2_000,
      });
      const abort = new AbortController();
      setTimeout(() => abort.abort(), 100);
      const aborted = await elapsed(() => kms.unwrap(new Uint8Array(32), 'c', { signal: abort.signal }));
      expect(aborted.outcome).toMatchObject({ code: 'KMS_UNAVAILABLE', retriable: true });
      expect(aborted.ms).toBeLessThan(1_500);
      const timedOut = await elapsed(() => kms.unwrap(new Uint8Array(32), 'c'));
      expect(timedOut.outcome).toMatchObject({ code: 'KMS_UNAVAILABLE' });
      expect(timedOut.ms).toBeGreaterThanOrEqual(1_900);
      await kms.close?.();
    });
  });

  describe('PKCS#11 adapter against a token whose decrypt never returns', () => {
    /** a pkcs11js stand-in: one token, one key; C_DecryptAsync hangs while `hang` is set, else "decrypts" */
    function token() {
      const t = {
        hang: true,
        opened: 0,
        closed: [] as number[],
        late: [] as ((b: Buffer) => void)[],
        load: () => undefined,
        C_Initialize: () => undefined,
        C_Finalize: () => undefined,
        C_GetSlotList: () => [Buffer.from([1])],
        C_GetTokenInfo: () => ({ label: 'tok ' }),
        C_OpenSession: () => Buffer.from([++t.opened]),
        C_Login: () => undefined,
        C_Logout: () => undefined,
        C_CloseSession: (s: Buffer) => void t.closed.push(s[0]!),
        C_FindObjectsInit: () => undefined,
        C_FindObjects: () => [Buffer.from([9])],
        C_FindObjectsFinal: () => undefined,
        C_DecryptInit: () => undefined,
        C_EncryptInit: () => undefined,
        C_DecryptAsync: (_s: Buffer, sealed: Buffer) =>
          t.hang ? new Promise<Buffer>((r) => t.late.push(r)) : Promise.resolve(Buffer.from(sealed.subarray(0, sealed.length - 16))),
        C_EncryptAsync: (_s: Buffer, p: Buffer) => Promise.resolve(Buffer.concat([p, Buffer.alloc(16)])),
      };
      return t;
    }
    const wrapped = Buffer.concat([Buffer.from([1]), Buffer.alloc(12), Buffer.alloc(32, 5), Buffer.alloc(16)]);

    it('the call fails within its timeout (KMS_UNAVAILABLE), or at once on abort; the next call takes a new session, and the hung one is closed when it ends', async () => {
      const t = token();
      const kms = pkcs11Kms({ library: 'fake.so', tokenLabel: 'tok', pin: '1234', keyLabel: 'kek', timeoutMs: 200 }, t as unknown as pkcs11js.PKCS11);
      const timedOut = await elapsed(() => kms.unwrap(wrapped, 'c'));
      expect(timedOut.outcome).toMatchObject({ code: 'KMS_UNAVAILABLE', retriable: true });
      expect(timedOut.ms).toBeGreaterThanOrEqual(190);
      expect(timedOut.ms).toBeLessThan(1_500);
      const abort = new AbortController();
      setTimeout(() => abort.abort(), 20);
      const aborted = await elapsed(() => kms.unwrap(wrapped, 'c', { signal: abort.signal }));
      expect(aborted.outcome).toMatchObject({ code: 'KMS_UNAVAILABLE' });
      expect(aborted.ms).toBeLessThan(190);
      expect(t.opened).toBe(2);
      t.hang = false;
      expect(Buffer.from(await kms.unwrap(wrapped, 'c'))).toEqual(Buffer.alloc(32, 5));
      expect(t.opened).toBe(3);
      expect(t.closed).toEqual([]);
      const lateKey = Buffer.alloc(32, 7);
      t.late.splice(0).forEach((answer) => answer(lateKey));
      await new Promise((r) => setImmediate(r));
      expect(t.closed.sort()).toEqual([1, 2]);
      // what came back too late is wiped
      expect(lateKey.every((b) => b === 0)).toBe(true);
    });
  });
});
