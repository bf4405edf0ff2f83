#!/usr/bin/env node
// Applies veil's patches to kafkajs 2.2.4 (patches/kafkajs/*.patch, unified diffs against the
// registry package; what each one changes and why: patches/kafkajs/README.md). Run by `npm ci` /
// `npm install` as part of the project's postinstall.
//
//   node scripts/patch-kafkajs.mjs [--check | --revert] [kafkajs directory]
//
// The directory defaults to node_modules/kafkajs. Idempotent: each touched file is recognized as
// upstream (its sha256 is pinned in patches/kafkajs/pristine.sha256), as patched (the patch
// reversed gives the pinned upstream file) or as unknown. Any other kafkajs version, or any file
// in neither state, is refused and nothing is written. Hunks apply exactly where they say (no
// fuzz, no offset search). --check exits 1 unless every file is patched; --revert restores
// upstream.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const VERSION = '2.2.4';
const PATCHES = fileURLToPath(new URL('../patches/kafkajs/', import.meta.url));
const DEFAULT_DIR = fileURLToPath(new URL('../node_modules/kafkajs/', import.meta.url));

const sha256 = (text) => createHash('sha256').update(text).digest('hex');

/** The files of a unified diff (`--- a/path`, `+++ b/path`, `@@ -a,b +c,d @@` hunks). */
export function parsePatch(text, name = 'patch') {
  const lines = text.split('\n');
  const files = [];
  let file;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith('--- ')) {
      const next = lines[++i] ?? '';
      if (!next.startsWith('+++ b/')) throw new Error(`${name}: expected "+++ b/<path>" after "${line}"`);
      file = { path: next.slice(6).split('\t')[0], created: line.startsWith('--- /dev/null'), hunks: [] };
      files.push(file);
      continue;
    }
    const header = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (!header) continue;
    if (!file) throw new Error(`${name}: a hunk before any file`);
    const hunk = {
      oldStart: +header[1],
      oldCount: header[2] === undefined ? 1 : +header[2],
      newStart: +header[3],
      newCount: header[4] === undefined ? 1 : +header[4],
      lines: [],
    };
    let old = 0;
    let added = 0;
    while (old < hunk.oldCount || added < hunk.newCount) {
      const body = lines[++i];
      if (body === undefined || !/^[ +-]/.test(body))
        throw new Error(`${name}: ${file.path}: hunk at -${hunk.oldStart} is cut short (or has a "\\ No newline" marker, which is not supported)`);
      if (body[0] !== '+') old++;
      if (body[0] !== '-') added++;
      hunk.lines.push(body);
    }
    file.hunks.push(hunk);
  }
  return files;
}

/** Applies (or, reverse, un-applies) hunks exactly where they say; throws on any mismatch. */
export function applyHunks(content, hunks, reverse = false) {
  const src = content.split('\n');
  const out = [];
  let cursor = 0;
  for (const h of hunks) {
    const [start, count, drop, add] = reverse ? [h.newStart, h.newCount, '+', '-'] : [h.oldStart, h.oldCount, '-', '+'];
    const at = count === 0 ? start : start - 1;
    const before = h.lines.filter((l) => l[0] !== add).map((l) => l.slice(1));
    const after = h.lines.filter((l) => l[0] !== drop).map((l) => l.slice(1));
    if (at < cursor || before.some((l, j) => src[at + j] !== l)) throw new Error(`hunk at line ${start} does not match`);
    out.push(...src.slice(cursor, at), ...after);
    cursor = at + before.length;
  }
  out.push(...src.slice(cursor));
  return out.join('\n');
}

function loadPatches() {
  const pristine = new Map(
    readFileSync(join(PATCHES, 'pristine.sha256'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => {
        const [hash, path] = l.split(/\s+/);
        return [path, hash];
      }),
  );
  const files = readdirSync(PATCHES)
    .filter((f) => f.endsWith('.patch'))
    .sort()
    .flatMap((name) => parsePatch(readFileSync(join(PATCHES, name), 'utf8'), name));
  const seen = new Set();
  for (const f of files) {
    if (seen.has(f.path)) throw new Error(`patches/kafkajs: ${f.path} is changed by two patches`);
    seen.add(f.path);
    if (f.created === pristine.has(f.path)) throw new Error(`patches/kafkajs: ${f.path} must be ${f.created ? 'absent from' : 'listed in'} pristine.sha256`);
  }
  return { pristine, files };
}

/** Each touched file: its state (upstream | patched | unknown) and both of its forms. */
function survey(dir) {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  if (pkg.name !== 'kafkajs' || pkg.version !== VERSION) {
    throw new Error(`refusing to patch ${pkg.name}@${pkg.version} in ${dir}: the patches are for kafkajs@${VERSION} only`);
  }
  const { pristine, files } = loadPatches();
  return files.map((f) => {
    const target = join(dir, f.path);
    const present = existsSync(target);
    const current = present ? readFileSync(target, 'utf8') : null;
    if (f.created) {
      const patched = applyHunks('', f.hunks);
      const state = !present ? 'upstream' : current === patched ? 'patched' : 'unknown';
      return { ...f, target, state, upstream: null, patched };
    }
    if (!present) return { ...f, target, state: 'unknown', upstream: null, patched: null };
    if (sha256(current) === pristine.get(f.path)) return { ...f, target, state: 'upstream', upstream: current, patched: applyHunks(current, f.hunks) };
    let upstream = null;
    try {
      upstream = applyHunks(current, f.hunks, true);
    } catch {
      // neither form
    }
    const state = upstream !== null && sha256(upstream) === pristine.get(f.path) ? 'patched' : 'unknown';
    return { ...f, target, state, upstream: state === 'patched' ? upstream : null, patched: state === 'patched' ? current : null };
  });
}

const write = (target, text) => {
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(`${target}.veil-tmp`, text);
  renameSync(`${target}.veil-tmp`, target);
};

/**
 * mode apply (default): patches every upstream file (nothing when all are patched already);
 * check: reports; revert: restores upstream. Throws, writing nothing, on an unknown file.
 */
export function patchKafkajs(dir = DEFAULT_DIR, mode = 'apply') {
  const files = survey(dir);
  const unknown = files.filter((f) => f.state === 'unknown').map((f) => f.path);
  if (unknown.length)
    throw new Error(`refusing to ${mode === 'check' ? 'vouch for' : mode} kafkajs in ${dir}: neither upstream ${VERSION} nor patched: ${unknown.join(', ')}`);
  const todo = files.filter((f) => f.state === (mode === 'revert' ? 'patched' : 'upstream'));
  if (mode === 'check') return { patched: todo.length === 0, files: files.map(({ path, state }) => ({ path, state })) };
  for (const f of todo) {
    if (mode === 'revert' && f.created) {
      rmSync(f.target);
      // a directory the patch created goes too
      if (readdirSync(dirname(f.target)).length === 0) rmSync(dirname(f.target), { recursive: true });
    } else write(f.target, mode === 'revert' ? f.upstream : f.patched);
  }
  return { changed: todo.map((f) => f.path) };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const mode = args.includes('--check') ? 'check' : args.includes('--revert') ? 'revert' : 'apply';
  const dir = args.find((a) => !a.startsWith('--')) ?? DEFAULT_DIR;
  try {
    const result = patchKafkajs(dir, mode);
    if (mode === 'check') {
      for (const f of result.files) console.log(`${f.state.padEnd(8)} ${f.path}`);
      process.exit(result.patched ? 0 : 1);
    }
    console.log(
      result.changed.length
        ? `veil: kafkajs ${VERSION} ${mode === 'revert' ? 'restored' : 'patched'}: ${result.changed.join(', ')}`
        : `veil: kafkajs ${VERSION} ${mode === 'revert' ? 'is upstream' : 'is patched'} already`,
    );
  } catch (e) {
    console.error(`veil: ${e.message}`);
    process.exit(1);
  }
}
