import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { idLines, receiptsOf } from '../../src/cli/subjects-bulk.ts';
import { SecretKey } from '../../src/engine/index.ts';
import { LocalKeystore } from '../../src/keystore/local-keystore.ts';
import { openSubjectKeyStore } from '../../src/subjects/index.ts';
import { fakeCliIo, masterKeyHex, tempDir, veil } from '../helpers/cli-io.ts';

const ids = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `bulk.person.${from + i}@example.org`);

/** A working directory whose data dir holds keys for `known` subjects. */
async function setup(known: string[]) {
  const cwd = await tempDir();
  const hex = masterKeyHex();
  const dataDir = join(cwd, '.veil');
  const keystore = await LocalKeystore.open({ dataDir, masterKey: SecretKey.fromBytes(Buffer.from(hex, 'hex')) });
  const store = await openSubjectKeyStore({ keystore, dataDir });
  const refs = new Map<string, string>();
  for (const id of known) refs.set(id, (await store.keyFor(id)).ref);
  await store.close();
  return { cwd, refs, io: fakeCliIo(cwd, { VEIL_MASTER_KEY: hex }) };
}

type Line = { line: number; subject?: string; generation?: number; alreadyErased?: boolean; receipt?: string; error?: { code: string; message: string } };
const parsed = (out: string): Line[] =>
  out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Line);

describe('veil subjects erase --from: many subjects in one run', () => {
  it('erases every id of the file with a receipt each, by reference only; refuses bad lines by number; a rerun returns every receipt', async () => {
    const known = ids(1200);
    const { cwd, refs, io } = await setup(known);
    // 1,200 known, one never seen (erased all the same: nothing is created), one not an id, and blank lines
    const lines = [...known.slice(0, 600), '', 'never.seen@example.org', 'x'.repeat(600), ...known.slice(600), ''];
    await writeFile(join(cwd, 'subjects.txt'), lines.join('\r\n'));
    const first = await veil(io, ['subjects', 'erase', '--from', 'subjects.txt', '--reason', 'accounts closed in November']);
    expect(first.code).toBe(1);
    const out = parsed(first.out);
    expect(out).toHaveLength(1202);
    for (const id of known) expect(first.out + first.err).not.toContain(id);
    const bad = out.filter((l) => l.error);
    expect(bad.map((l) => [l.line, l.error!.code])).toEqual([[603, 'SUBJECT_ID_INVALID']]);
    const byLine = new Map(out.map((l) => [l.line, l]));
    expect(byLine.get(1)).toMatchObject({ subject: refs.get(known[0]!), generation: 1, alreadyErased: false });
    expect(byLine.get(1203)).toMatchObject({ subject: refs.get(known[1199]!), alreadyErased: false });
    expect(first.err).toMatch(/1201 erased, 0 erased before, 1 refused, of 1202 lines in [\d.]+ s/);

    // again: nothing left to erase, every receipt returned
    const again = await veil(io, ['subjects', 'erase', '--from', '-', '--reason', 'accounts closed in November'], known.join('\n'));
    expect(again.code).toBe(0);
    expect(parsed(again.out).every((l) => l.alreadyErased === true && l.receipt)).toBe(true);
    expect(again.err).toMatch(/0 erased, 1200 erased before, 0 refused, of 1200 lines/);

    // every receipt verifies in one call; a damaged one is named by its line
    const receipts = first.out
      .trim()
      .split('\n')
      .filter((l) => !l.includes('"error"'));
    receipts[5] = receipts[5]!.replace(/"receipt":"([^"]+)"/, (_, jws: string) => `"receipt":"${jws.slice(0, -4)}AAAA"`);
    await writeFile(join(cwd, 'receipts.jsonl'), `${receipts.join('\n')}\n`);
    const verified = await veil(io, ['subjects', 'verify-receipt', 'receipts.jsonl']);
    expect(verified.code).toBe(1);
    const results = parsed(verified.out) as unknown as { line: number; valid: boolean; claims?: { sub: string } }[];
    expect(results.filter((r) => !r.valid).map((r) => r.line)).toEqual([6]);
    expect(results.filter((r) => r.valid)).toHaveLength(1200);
    expect(verified.err).toMatch(/1200 valid, 1 not valid, of 1201 receipts/);
    expect(await readFile(join(cwd, '.veil', 'audit.log'), 'utf8')).not.toContain(known[0]!);
  }, 120_000);

  it('refuses --from with an id on the command line, on status, and a reason that names a line (that line only)', async () => {
    const { io } = await setup([]);
    expect((await veil(io, ['subjects', 'erase', 'someone', '--from', '-', '--reason', 'r'])).code).toBe(2);
    expect((await veil(io, ['subjects', 'status', '--from', '-'])).code).toBe(2);
    const named = await veil(
      io,
      ['subjects', 'erase', '--from', '-', '--reason', 'request of alex.named@example.org'],
      'alex.named@example.org\nother.person@example.org\n',
    );
    expect(parsed(named.out).map((l) => l.error?.code ?? 'ok')).toEqual(['ERASURE_REQUEST_INVALID', 'ok']);
  });
});

describe('bulk input', () => {
  it('reads ids a line, numbered, blank lines skipped; receipts as one document, one JWS, or one a line', () => {
    expect(idLines('a\r\n\nb\n  \nc')).toEqual([
      { line: 1, id: 'a' },
      { line: 3, id: 'b' },
      { line: 5, id: 'c' },
    ]);
    expect(receiptsOf('{\n  "receipt": "x.y.z",\n  "claims": {}\n}\n')).toEqual([{ line: 1, receipt: 'x.y.z' }]);
    expect(receiptsOf('x.y.z\n')).toEqual([{ line: 1, receipt: 'x.y.z' }]);
    expect(receiptsOf('a.b.c\n{"line":2,"receipt":"d.e.f"}\nnot json {\n')).toEqual([
      { line: 1, receipt: 'a.b.c' },
      { line: 2, receipt: 'd.e.f' },
      { line: 3, receipt: 'not json {' },
    ]);
  });
});
