import { afterEach, describe, expect, it } from 'vitest';
import { CONTROL_STORE_ENV } from '../../src/control/control-store.ts';
import {
  DATA_DIR_EPHEMERAL_ENV,
  lazySubjectKeyStore,
  scopesToSubject,
  subjectStoreSettings,
  unsharedSubjectStore,
} from '../../src/subjects/open-subject-store.ts';
import { cleanup, keystoreIn, tempDir } from './helpers.ts';
import { plainConnection } from '../../src/kafka/index.ts';

afterEach(cleanup);

const SCOPED = {
  keys: new Map([
    ['shared-gcm', {}],
    ['person-siv', { scope: 'subject' as const }],
  ]),
};
const SHARED_ONLY = { keys: new Map([['shared-gcm', {}]]) };

describe('VEIL_SUBJECT_STORE follows the control store when unset', () => {
  it("reads the control store's own variable (the subjects layer names it without importing control)", () => {
    expect(CONTROL_STORE_ENV).toBe('VEIL_CONTROL_STORE');
  });

  it('unset: kafka on a shared control store, else local; given, as given', () => {
    const brokers = { KAFKA_BROKERS: 'k1:9092,k2:9092' };
    expect(subjectStoreSettings({})).toEqual({ kind: 'local' });
    expect(subjectStoreSettings({ ...brokers, VEIL_CONTROL_STORE: 'local' })).toEqual({ kind: 'local' });
    expect(subjectStoreSettings({ ...brokers, VEIL_CONTROL_STORE: 'kafka' })).toEqual({
      kind: 'kafka',
      connection: expect.objectContaining({ brokers: ['k1:9092', 'k2:9092'], protocol: 'PLAINTEXT' }),
      topic: 'veil.subjects',
      partitions: 6,
    });
    expect(subjectStoreSettings({ ...brokers, VEIL_CONTROL_STORE: 'kafka', VEIL_SUBJECT_STORE: '' })).toMatchObject({ kind: 'kafka' });
    // an explicit choice wins either way
    expect(subjectStoreSettings({ ...brokers, VEIL_CONTROL_STORE: 'kafka', VEIL_SUBJECT_STORE: 'local' })).toEqual({ kind: 'local' });
    expect(subjectStoreSettings({ ...brokers, VEIL_SUBJECT_STORE: 'kafka' })).toMatchObject({ kind: 'kafka' });
    // the control store's own brokers, when it has its own cluster; the subject topic's own first
    expect(subjectStoreSettings({ ...brokers, VEIL_CONTROL_STORE: 'kafka', VEIL_CONTROL_BROKERS: 'c:9092' })).toMatchObject({
      connection: { brokers: ['c:9092'] },
    });
    expect(subjectStoreSettings({ ...brokers, VEIL_CONTROL_STORE: 'kafka', VEIL_CONTROL_BROKERS: 'c:9092', VEIL_SUBJECT_BROKERS: 's:9092' })).toMatchObject({
      connection: { brokers: ['s:9092'] },
    });
  });
});

describe('a local subject-key store where it would split or lose keys is refused (SUBJECT_STORE_NOT_SHARED)', () => {
  it('knows it from a shared control store and from VEIL_DATA_DIR_EPHEMERAL=true', () => {
    const local = { kind: 'local' } as const;
    expect(unsharedSubjectStore(local, {})).toBeUndefined();
    expect(unsharedSubjectStore(local, { [DATA_DIR_EPHEMERAL_ENV]: 'false' })).toBeUndefined();
    expect(unsharedSubjectStore(local, { VEIL_CONTROL_STORE: 'kafka' })).toMatch(/VEIL_CONTROL_STORE=kafka/);
    expect(unsharedSubjectStore(local, { [DATA_DIR_EPHEMERAL_ENV]: 'true' })).toMatch(/VEIL_DATA_DIR_EPHEMERAL=true/);
    expect(
      unsharedSubjectStore(
        { kind: 'kafka', connection: plainConnection(['k:9092']), topic: 't' },
        { VEIL_CONTROL_STORE: 'kafka', [DATA_DIR_EPHEMERAL_ENV]: 'true' },
      ),
    ).toBeUndefined();
    // a misspelt switch is not read as false
    expect(() => unsharedSubjectStore(local, { [DATA_DIR_EPHEMERAL_ENV]: 'yes' })).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  });

  it('at start when the configuration scopes a key to the subject; else when something opens it', async () => {
    expect([scopesToSubject(SCOPED), scopesToSubject(SHARED_ONLY)]).toEqual([true, false]);
    const dataDir = await tempDir();
    const keystore = await keystoreIn(dataDir);
    const env = { [DATA_DIR_EPHEMERAL_ENV]: 'true' };
    const open = (config: typeof SCOPED, e: Record<string, string> = env) =>
      lazySubjectKeyStore({ keystore, dataDir, settings: subjectStoreSettings(e), env: e, config });
    expect(() => open(SCOPED)).toThrow(
      expect.objectContaining({
        code: 'SUBJECT_STORE_NOT_SHARED',
        message: expect.stringMatching(/scopes keys to the data subject.*VEIL_DATA_DIR_EPHEMERAL=true.*Set VEIL_SUBJECT_STORE=kafka/),
      }),
    );
    expect(() => open(SCOPED, { VEIL_SUBJECT_STORE: 'local', VEIL_CONTROL_STORE: 'kafka', KAFKA_BROKERS: 'k:9092' })).toThrow(
      expect.objectContaining({ code: 'SUBJECT_STORE_NOT_SHARED' }),
    );
    // no scoped key: the process starts, and an erasure (or a version published later) is refused when it opens the store
    const unscoped = open(SHARED_ONLY);
    await expect(unscoped.erase('alice', { by: 'test', reason: 'asked' })).rejects.toMatchObject({ code: 'SUBJECT_STORE_NOT_SHARED' });
    await expect(unscoped.keyFor('alice')).rejects.toMatchObject({ code: 'SUBJECT_STORE_NOT_SHARED' });
    expect(unscoped.isOpen).toBe(false);
    // one process on a data dir that stays: the embedded default, unchanged
    const kept = open(SCOPED, {});
    expect(await kept.keyFor('alice')).toHaveProperty('key');
    await kept.close();
  });
});
