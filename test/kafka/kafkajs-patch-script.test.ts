import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyHunks, parsePatch, patchKafkajs } from '../../scripts/patch-kafkajs.mjs';
import { INSTALLED_KAFKAJS, kafkajsCopies } from '../helpers/patched-kafkajs.ts';
import { ROOT } from '../helpers/processes.ts';

/**
 * scripts/patch-kafkajs.mjs, run by the project's postinstall: patches kafkajs 2.2.4 only,
 * idempotently, all or nothing, and can prove which state a tree is in.
 */
const copies = kafkajsCopies();
afterAll(() => copies.remove());

const TOUCHED = [
  'src/consumer/filterAbortedMessages.js',
  'src/protocol/recordBatch/record/v0/index.js',
  'src/protocol/recordBatch/record/v0/decoder.js',
  'src/protocol/requests/offsetFetch/index.js',
  'src/protocol/requests/offsetFetch/v7/request.js',
  'src/protocol/requests/offsetFetch/v7/response.js',
  'src/broker/index.js',
  'src/admin/index.js',
  'types/index.d.ts',
  'src/veil-patch.js',
];
const snapshot = (dir: string) => TOUCHED.map((f) => (existsSync(join(dir, f)) ? readFileSync(join(dir, f), 'utf8') : null));
const fresh = (from: string, label: string) => {
  const dir = join(copies.upstream, '..', label);
  cpSync(from, dir, { recursive: true });
  return dir;
};

describe('scripts/patch-kafkajs.mjs', () => {
  it('the installed kafkajs is patched (the postinstall ran)', () => {
    expect(patchKafkajs(INSTALLED_KAFKAJS, 'check').patched).toBe(true);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    // the native builds first (the native core's, librdkafka's, …, at once, each waited for), then
    // the patch, last: nothing after it reinstalls kafkajs
    expect(pkg.scripts.postinstall).toBe('sh scripts/postinstall.sh');
    const script = readFileSync(join(ROOT, 'scripts/postinstall.sh'), 'utf8');
    expect(script).toMatch(/^for build in native librdkafka pkcs11js better-sqlite3; do$/m);
    expect(script.trim().split('\n').at(-1)).toBe('node "$here/scripts/patch-kafkajs.mjs"');
    expect(script.indexOf('wait "$pid" || failed=1')).toBeGreaterThan(0);
    expect(script.indexOf('wait "$pid" || failed=1')).toBeLessThan(script.lastIndexOf('patch-kafkajs.mjs'));
  });

  it('tells upstream from patched, and reverting gives upstream back', () => {
    expect(patchKafkajs(copies.upstream, 'check')).toEqual({ patched: false, files: TOUCHED.map((path) => ({ path, state: 'upstream' })) });
    expect(patchKafkajs(copies.patched, 'check').files.every((f) => f.state === 'patched')).toBe(true);
    expect(snapshot(copies.upstream).slice(4, 6)).toEqual([null, null]);
    const reverted = fresh(copies.patched, 'reverted');
    expect(patchKafkajs(reverted, 'revert').changed).toEqual(TOUCHED);
    expect(snapshot(reverted)).toEqual(snapshot(copies.upstream));
    expect(existsSync(join(reverted, 'src/protocol/requests/offsetFetch/v7'))).toBe(false);
  });

  it('is idempotent, and finishes a tree an interrupted run left half patched', () => {
    const dir = fresh(copies.patched, 'again');
    expect(patchKafkajs(dir).changed).toEqual([]);
    expect(snapshot(dir)).toEqual(snapshot(copies.patched));
    const half = fresh(copies.upstream, 'half');
    cpSync(join(copies.patched, TOUCHED[0]!), join(half, TOUCHED[0]!));
    expect(patchKafkajs(half).changed).toEqual(TOUCHED.slice(1));
    expect(snapshot(half)).toEqual(snapshot(copies.patched));
  });

  it('refuses any other kafkajs version, writing nothing', () => {
    const dir = fresh(copies.upstream, 'other-version');
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...pkg, version: '2.2.5' }));
    expect(() => patchKafkajs(dir)).toThrow(/refusing to patch kafkajs@2\.2\.5.*kafkajs@2\.2\.4 only/);
    expect(snapshot(dir)).toEqual(snapshot(copies.upstream));
  });

  it('refuses a file that is neither upstream nor patched, writing nothing (not even the other files)', () => {
    const dir = fresh(copies.upstream, 'edited');
    writeFileSync(join(dir, 'src/broker/index.js'), `${readFileSync(join(dir, 'src/broker/index.js'), 'utf8')}// local edit\n`);
    const before = snapshot(dir);
    expect(() => patchKafkajs(dir)).toThrow(/neither upstream 2\.2\.4 nor patched: src\/broker\/index\.js/);
    expect(snapshot(dir)).toEqual(before);
    expect(() => patchKafkajs(dir, 'check')).toThrow(/src\/broker\/index\.js/);
  });

  it('applies hunks only exactly where they say', () => {
    const [file] = parsePatch('--- a/x\n+++ b/x\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n');
    expect(applyHunks('a\nb\nc\nd\n', file!.hunks)).toBe('a\nb\nC\nd\n');
    expect(applyHunks('a\nb\nC\nd\n', file!.hunks, true)).toBe('a\nb\nc\nd\n');
    // the same lines one line further down: no offset search, no fuzz
    expect(() => applyHunks('z\na\nb\nc\nd\n', file!.hunks)).toThrow(/does not match/);
    expect(() => parsePatch('--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n')).toThrow(/cut short/);
  });
});
