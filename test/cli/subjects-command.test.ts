import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { subjectsHelp } from '../../src/cli/subjects-command.ts';
import { SecretKey } from '../../src/engine/index.ts';
import { LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { openSubjectKeyStore } from '../../src/subjects/index.ts';
import { fakeCliIo, masterKeyHex, tempDir, veil } from '../helpers/cli-io.ts';

const ID = 'sam.subject@example.org';

/** A working directory whose data dir (./.veil) holds a key for ID; the io carries its master key. */
async function setup() {
  const cwd = await tempDir();
  const hex = masterKeyHex();
  const dataDir = join(cwd, '.veil');
  const keystore = await LocalKeystore.open({ dataDir, masterKey: SecretKey.fromBytes(Buffer.from(hex, 'hex')) });
  const store = await openSubjectKeyStore({ keystore, dataDir });
  const { ref } = await store.keyFor(ID);
  await store.close();
  return { cwd, dataDir, ref, io: fakeCliIo(cwd, { VEIL_MASTER_KEY: hex }) };
}

const noId = (...texts: string[]) => {
  for (const t of texts) expect(t).not.toContain(ID);
};

describe('veil subjects', () => {
  it('status, erase, status again and verify-receipt: the reference and the receipt, never the id or a key', async () => {
    const { cwd, dataDir, ref, io } = await setup();
    const before = await veil(io, ['subjects', 'status', '-'], `${ID}\n`);
    expect(before).toMatchObject({ code: 0, err: '' });
    expect(before.out).toMatch(new RegExp(`^exists  subject ${ref}  generation 1  created \\d{4}-`));

    const erased = await veil(io, ['subjects', 'erase', '-', '--reason', 'Art. 17 request 77', '--by', 'dpo'], ID);
    expect(erased.code).toBe(0);
    const printed = JSON.parse(erased.out) as { receipt: string; claims: Record<string, unknown> };
    expect(printed.claims).toMatchObject({ sub: ref, generation: 1, by: 'dpo', reason: 'Art. 17 request 77', alreadyErased: false, iss: 'urn:veil:cli' });
    expect(printed.claims.destroyedKey).toMatch(/^[0-9a-f]{64}$/);
    expect(printed.receipt.split('.')).toHaveLength(3);

    const after = await veil(io, ['subjects', 'status', '-', '--json'], ID);
    expect(JSON.parse(after.out)).toMatchObject({ state: 'erased', subject: ref, generation: 1 });

    await writeFile(join(cwd, 'receipt.json'), erased.out);
    const verified = await veil(io, ['subjects', 'verify-receipt', 'receipt.json']);
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.out)).toEqual({ valid: true, claims: printed.claims });
    expect((await veil(io, ['subjects', 'verify-receipt', '-'], `${printed.receipt}\n`)).code).toBe(0);

    const audit = await readFile(join(dataDir, 'audit.log'), 'utf8');
    const events = audit
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { channel: string; admin: { action: string }; erasure: { subject: string } });
    expect(events.map((e) => [e.channel, e.admin.action, e.erasure.subject])).toEqual([
      ['cli', 'subject.status', ref],
      ['cli', 'subject.erase', ref],
      ['cli', 'subject.status', ref],
    ]);
    noId(before.out, before.err, erased.out, erased.err, after.out, verified.out, audit);
  });

  it('a receipt that was changed, or of another key set, is refused with exit 1', async () => {
    const { cwd, io } = await setup();
    const { receipt } = JSON.parse((await veil(io, ['subjects', 'erase', '-', '--reason', 'r'], ID)).out) as { receipt: string };
    const [h, p, s] = receipt.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, generation: 2 })).toString('base64url')}.${s}`;
    const tampered = await veil(io, ['subjects', 'verify-receipt', '-'], forged);
    expect(tampered).toMatchObject({ code: 1, out: '' });
    expect(tampered.err).toContain('[RECEIPT_INVALID]');
    expect((await veil(io, ['subjects', 'verify-receipt', '-'], 'not a receipt')).code).toBe(1);
    const other = fakeCliIo(cwd, { VEIL_MASTER_KEY: masterKeyHex() });
    const elsewhere = await veil(other, ['subjects', 'verify-receipt', '--data-dir', join(cwd, 'other'), '-'], receipt);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.err).toContain('holds no veil-receipts key');
  });

  it('an id on the command line works, with a note about shell history; an invalid one is refused without echo', async () => {
    const { ref, io } = await setup();
    const run = await veil(io, ['subjects', 'status', ID]);
    expect(run.out).toContain(ref);
    expect(run.err).toContain('shell history');
    const bad = await veil(io, ['subjects', 'erase', '-', '--reason', 'r'], 'bad\u0007id');
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('[SUBJECT_ID_INVALID]');
    expect(bad.err).not.toContain('bad');
    const named = await veil(io, ['subjects', 'erase', '-', '--reason', `erase ${ID}`], ID);
    expect(named.code).toBe(1);
    expect(named.err).toContain('[ERASURE_REQUEST_INVALID]');
    noId(named.err, named.out);
  });

  it.each([
    [['subjects', 'erase', '-'], "'erase' needs --reason"],
    [['subjects', 'status', '-', '--reason', 'x'], '--reason does not apply'],
    [['subjects', 'erase', '-', '--json', '--reason', 'x'], '--json does not apply'],
    [['subjects', 'status'], 'takes one subject id'],
    [['subjects', 'status', 'a', 'b'], 'takes one subject id'],
    [['subjects', 'shred', '-'], "unknown action 'shred'"],
    [['subjects', '--nope'], "Unknown option '--nope'"],
  ])('usage errors exit 2: %j', async (argv, message) => {
    const { io } = await setup();
    const run = await veil(io, argv, ID);
    expect(run.code).toBe(2);
    expect(run.err).toContain(message);
  });

  it("the audit log rotates as the configuration's service.audit says (--config), like every other writer of it", async () => {
    const { cwd, dataDir, io } = await setup();
    const example = await readFile(new URL('../../config/example.yaml', import.meta.url), 'utf8');
    await writeFile(join(cwd, 'veil.yaml'), `${example}\nservice:\n  audit: { rotateBytes: 4096, keepFiles: 12 }\n`);
    // a full log and nine rotated files: the default (64 MiB, 8 kept) would neither rotate it nor keep the ninth
    await writeFile(join(dataDir, 'audit.log'), `${'{"filler":true}\n'.repeat(250)}`);
    for (let i = 1; i <= 9; i++) await writeFile(join(dataDir, `audit.log.${i}`), `{"rotated":${i}}\n`);
    const run = await veil(io, ['subjects', 'status', '-', '--config', 'veil.yaml'], `${ID}\n`);
    expect(run.code).toBe(0);
    expect(await readFile(join(dataDir, 'audit.log.10'), 'utf8')).toBe('{"rotated":9}\n');
    expect((await readFile(join(dataDir, 'audit.log.1'), 'utf8')).startsWith('{"filler":true}')).toBe(true);
    expect(JSON.parse((await readFile(join(dataDir, 'audit.log'), 'utf8')).trim())).toMatchObject({ channel: 'cli' });
    const bad = await veil(io, ['subjects', 'status', '-', '--config', 'missing.yaml'], `${ID}\n`);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('CONFIG_INVALID');
  });

  it('help exits 0; the group without an action prints the usage and exits 2; veil help lists it', async () => {
    const { io } = await setup();
    expect(await veil(io, ['subjects', 'help'])).toEqual({ code: 0, out: subjectsHelp, err: '' });
    expect(await veil(io, ['subjects', 'erase', '--help'])).toMatchObject({ code: 0, out: subjectsHelp });
    expect(await veil(io, ['subjects'])).toMatchObject({ code: 2, out: subjectsHelp });
    expect((await veil(io, ['help'])).out).toContain('subjects');
  });
});
