import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compileVeilConfigText } from '../../src/app/config-file.ts';
import { ConfigVersions } from '../../src/control/index.ts';
import { EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';
import { fakeCliIo, veil } from '../helpers/cli-io.ts';

let dir: string;
const now = new Date('2026-01-02T03:04:05Z');

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'veil-versions-'));
});
afterEach(async () => rm(dir, { recursive: true, force: true }));

describe('configuration versions in the data dir', () => {
  it('adopts the configuration file as version 1, and again only when the file changes', async () => {
    const file = join(dir, 'config.yaml');
    await writeFile(file, EXAMPLE_CONFIG_TEXT);
    const store = await ConfigVersions.open(dir);
    expect(await store.adopt(file, now, compileVeilConfigText)).toMatchObject({ number: 1, adopted: true });
    // a portal publish since, then a restart with the same file: the published version stays active
    await store.publish(`${EXAMPLE_CONFIG_TEXT}# edited in the portal\n`, { by: 'alice', source: 'portal', note: 'x', now });
    const reopened = await ConfigVersions.open(dir);
    expect(await reopened.adopt(file, now, compileVeilConfigText)).toMatchObject({ number: 2, adopted: false });
    // the operator edits the file: it becomes version 3
    await writeFile(file, `${EXAMPLE_CONFIG_TEXT}# edited on disk\n`);
    expect(await reopened.adopt(file, now, compileVeilConfigText)).toMatchObject({ number: 3, adopted: true });
    expect(reopened.versions().map((v) => [v.number, v.source, v.by])).toEqual([
      [1, 'file', 'file'],
      [2, 'portal', 'alice'],
      [3, 'file', 'file'],
    ]);
  });

  it('processes starting together on one data dir adopt the file once; racing publishes each get their own number, none lost', async () => {
    const file = join(dir, 'config.yaml');
    await writeFile(file, EXAMPLE_CONFIG_TEXT);
    // the stores of four processes sharing the data dir (veil serve --workers, a stream group)
    const stores = await Promise.all([1, 2, 3, 4].map(() => ConfigVersions.open(dir)));
    const adopted = await Promise.all(stores.map((s) => s.adopt(file, now, compileVeilConfigText)));
    expect(adopted.map((a) => a.number)).toEqual([1, 1, 1, 1]);
    expect(adopted.filter((a) => a.adopted)).toHaveLength(1);
    const numbers = await Promise.all(
      stores.map((s, i) => s.publish(`${EXAMPLE_CONFIG_TEXT}# publish ${i}\n`, { by: `p${i}`, source: 'portal', note: 'x', now })),
    );
    expect([...numbers].sort()).toEqual([2, 3, 4, 5]);
    const reopened = await ConfigVersions.open(dir);
    expect(reopened.versions().map((v) => v.number)).toEqual([1, 2, 3, 4, 5]);
    for (const [i, n] of numbers.entries()) expect(await reopened.read(n)).toContain(`# publish ${i}`);
  });

  it('a version file left by a process that died before writing the index is replaced by the next publish', async () => {
    const store = await ConfigVersions.open(dir);
    await writeFile(store.file(1), 'half-published by a process killed before its index write', { mode: 0o400 });
    expect(await store.publish(EXAMPLE_CONFIG_TEXT, { by: 'alice', source: 'portal', note: 'x', now })).toBe(1);
    expect(await store.read(1)).toBe(EXAMPLE_CONFIG_TEXT);
  });

  it('refuses an invalid configuration file at adoption with every problem, publishing nothing', async () => {
    const file = join(dir, 'config.yaml');
    await writeFile(file, EXAMPLE_CONFIG_TEXT.replace('keepFirst: 6', 'keepFirst: 99'));
    const store = await ConfigVersions.open(dir);
    await expect(store.adopt(file, now, compileVeilConfigText)).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining('/sequences/card-fpe/steps/0/keepFirst'),
    });
    expect(store.versions()).toEqual([]);
  });

  it("adopts with the check it is given (the wiring's compiler): its errors refuse the file, its warnings do not", async () => {
    const file = join(dir, 'config.yaml');
    await writeFile(file, 'any text\n');
    const store = await ConfigVersions.open(dir);
    const refuse = () => ({ issues: [{ severity: 'error' as const, pointer: '/x', message: 'refused by the check' }] });
    await expect(store.adopt(file, now, refuse)).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining('/x: refused by the check'),
    });
    expect(store.versions()).toEqual([]);
    const warn = () => ({ issues: [{ severity: 'warning' as const, pointer: '/x', message: 'only a warning' }] });
    expect(await store.adopt(file, now, warn)).toMatchObject({ number: 1, adopted: true });
  });

  it('writes published versions read-only, and each is a configuration `veil config validate` accepts', async () => {
    const store = await ConfigVersions.open(dir);
    const n = await store.publish(EXAMPLE_CONFIG_TEXT, { by: 'alice', source: 'portal', note: 'x', now });
    expect((await stat(store.file(n))).mode & 0o222).toBe(0);
    await expect(store.publish(EXAMPLE_CONFIG_TEXT, { by: 'bob', source: 'portal', note: 'y', now })).resolves.toBe(2);
    const run = await veil(fakeCliIo(dir), ['config', 'validate', '--config', store.file(n)]);
    expect(run.code).toBe(0);
    expect(run.out).toContain('valid');
    expect(await readFile(store.file(n), 'utf8')).toBe(EXAMPLE_CONFIG_TEXT);
  });

  it('keeps drafts with their test cases, and refuses ids that are not draft ids', async () => {
    const store = await ConfigVersions.open(dir);
    const draft = await store.createDraft(1, 'version: 1\n', 'alice', now);
    await store.saveDraft(
      draft.id,
      {
        text: 'version: 2\n',
        tests: [{ id: 't', name: 'n', className: 'C', propertyName: 'p', role: 'r', action: 'Unprotect', value: 'v', expect: 'denied' }],
      },
      now,
    );
    expect(await store.draftText(draft.id)).toBe('version: 2\n');
    expect((await store.drafts()).map((d) => d.tests.length)).toEqual([1]);
    await expect(store.draft('../../keystore')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await store.deleteDraft(draft.id);
    expect(await store.drafts()).toEqual([]);
  });
});
