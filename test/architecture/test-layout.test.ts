import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;
const folders = (dir: string) =>
  readdirSync(join(ROOT, dir), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
const files = (dir: string) =>
  readdirSync(join(ROOT, dir), { withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => e.name);

describe('test/integration and test/security mirror src (issue 44)', () => {
  it.each(['test/integration', 'test/security'])('%s holds a folder per area of src, named as src names it, and no file outside them', (dir) => {
    const areas = new Set(folders('src'));
    expect(folders(dir).filter((f) => !areas.has(f))).toEqual([]);
    expect(files(dir)).toEqual([]);
  });
});
