import { mkdir, mkdtemp, readFile, rename, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileAuditSink, type AuditEvent } from '../../src/audit/audit-sink.ts';

const event = (n: number): AuditEvent => ({
  eventId: `e${n}`,
  time: '2026-01-01T00:00:00.000Z',
  requestId: `r${n}`,
  channel: 'gateway',
  outcome: 'ok',
  instances: 1,
  fields: [],
});

describe('FileAuditSink', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('rejects while its file cannot be opened, and writes once it can (no cached failure)', async () => {
    dir = await mkdtemp(join(tmpdir(), 'veil-audit-'));
    const sink = new FileAuditSink(join(dir, 'later', 'audit.log'));
    await expect(sink.record(event(1))).rejects.toMatchObject({ code: 'ENOENT' });
    await mkdir(join(dir, 'later'));
    await sink.record(event(2));
    await sink.close();
    expect(
      (await readFile(join(dir, 'later', 'audit.log'), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).eventId),
    ).toEqual(['e2']);
  });

  it('writes records in the order given, whether written at once or queued behind an open, and follows a file renamed under it', async () => {
    dir = await mkdtemp(join(tmpdir(), 'veil-audit-'));
    const path = join(dir, 'audit.log');
    const sink = new FileAuditSink(path);
    // the first record opens the file (queued); the next ones, given without waiting, queue behind it
    await Promise.all([1, 2, 3].map((n) => sink.record(event(n))));
    // the file open and nothing queued: written at once, in order
    for (let n = 4; n <= 50; n++) await sink.record(event(n));
    await Promise.all([51, 52].map((n) => sink.record(event(n))));
    // another process rotated the log: the next record notices and goes to the new audit.log
    await rename(path, `${path}.1`);
    await sink.record(event(53));
    await sink.record(event(54));
    await sink.close();
    const ids = async (file: string) =>
      (await readFile(file, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).eventId as string);
    expect(await ids(`${path}.1`)).toEqual(Array.from({ length: 52 }, (_, i) => `e${i + 1}`));
    expect(await ids(path)).toEqual(['e53', 'e54']);
  });

  it('rejects every write to a full device', async () => {
    dir = await mkdtemp(join(tmpdir(), 'veil-audit-'));
    await symlink('/dev/full', join(dir, 'audit.log'));
    const sink = new FileAuditSink(join(dir, 'audit.log'));
    await expect(sink.record(event(1))).rejects.toMatchObject({ code: 'ENOSPC' });
    await expect(sink.record(event(2))).rejects.toMatchObject({ code: 'ENOSPC' });
    await sink.close();
  });
});

describe('FileAuditSink rotation and paging', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('rotates at rotateBytes, keeps keepFiles older files, and two writers on one log lose nothing that is kept', async () => {
    dir = await mkdtemp(join(tmpdir(), 'veil-audit-'));
    const path = join(dir, 'audit.log');
    const a = new FileAuditSink(path, { rotateBytes: 4096, keepFiles: 3 });
    const b = new FileAuditSink(path, { rotateBytes: 4096, keepFiles: 3 });
    for (let i = 0; i < 60; i++) await Promise.all([a.record(event(2 * i)), b.record(event(2 * i + 1))]);
    await a.close();
    await b.close();
    const { readdir, stat } = await import('node:fs/promises');
    expect((await readdir(dir)).sort()).toEqual(['audit.log', 'audit.log.1', 'audit.log.2', 'audit.log.3']);
    const kept: string[] = [];
    for (const f of ['audit.log.3', 'audit.log.2', 'audit.log.1', 'audit.log']) {
      // the other writer may add records while one rotates: a few records over, never unbounded
      expect((await stat(join(dir, f))).size).toBeLessThanOrEqual(4096 + 10 * 100);
      expect((await stat(join(dir, f))).mode & 0o777).toBe(0o600);
      kept.push(
        ...(await readFile(join(dir, f), 'utf8'))
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l).eventId as string),
      );
    }
    // the newest records are all there, each once
    expect(new Set(kept).size).toBe(kept.length);
    expect(kept.slice(-10).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `e${110 + i}`).sort());

    // pages newest first across the files, each record once, until the oldest kept
    const reader = new FileAuditSink(path, { rotateBytes: 4096, keepFiles: 3 });
    const paged: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 50; i++) {
      const page = await reader.page({ limit: 7, ...(cursor ? { cursor } : {}) });
      expect(page.events.length).toBeLessThanOrEqual(7);
      paged.push(...page.events.map((e) => e.eventId));
      if (!page.next) break;
      cursor = page.next;
    }
    expect(paged).toEqual([...kept].reverse());
    expect((await reader.page({ limit: 5, cursor: '99.12' })).events).toEqual([]);
  });
});
