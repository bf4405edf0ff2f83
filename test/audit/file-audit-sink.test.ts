import { mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileAuditSink, type AuditEvent } from '../../src/audit/audit-sink.ts';

const event = (n: number): AuditEvent => ({ eventId: `e${n}`, time: '2026-01-01T00:00:00.000Z', requestId: `r${n}`, channel: 'gateway', outcome: 'ok', instances: 1, fields: [] });

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
    expect((await readFile(join(dir, 'later', 'audit.log'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l).eventId)).toEqual(['e2']);
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
