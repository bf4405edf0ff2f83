import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEV_CLIENT_FILE, devClient } from '../../src/identity/dev-client.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'veil-dev-client-'));
});
afterEach(async () => rm(dir, { recursive: true, force: true }));

describe('the development client', () => {
  it('processes starting together on one data dir all get the one secret created, whole (never an empty one)', async () => {
    // several rounds on fresh dirs: the race (a reader between another's create and write) is timing
    for (let round = 0; round < 20; round++) {
      const each = await Promise.all(Array.from({ length: 8 }, () => devClient(join(dir, `round-${round}`), ['ingest'])));
      expect(each.filter((c) => c.created)).toHaveLength(1);
      expect(each.map((c) => c.secret)).toEqual(Array(8).fill(each[0]!.secret));
    }
    const clients = await Promise.all(Array.from({ length: 8 }, () => devClient(join(dir, 'data'), ['ingest'])));
    expect(new Set(clients.map((c) => c.secret)).size).toBe(1);
    expect(clients[0]!.secret).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect((await stat(join(dir, 'data', DEV_CLIENT_FILE))).mode & 0o777).toBe(0o600);
    expect(await readdir(join(dir, 'data'))).toEqual([DEV_CLIENT_FILE]);
    const again = await devClient(join(dir, 'data'), ['ingest']);
    expect([again.created, again.secret]).toEqual([false, clients[0]!.secret]);
  });
});
