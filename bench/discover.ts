// npm run bench:discover — precision and recall of each `veil discover` detector on a labelled
// corpus this bench generates (faker data of several locales, with decoys: Luhn-invalid numbers,
// order ids, UUIDs, version strings, product names, other dates), and the time to profile 10,000
// records from a JSON-lines file beside the bare read-and-parse of the same file (the baseline).
// Then the unmapped guard (the stream's and gateway's) over the decoys alone: the share of records
// it would refuse, by path, and its scan time beside the bare validating scan of the same bytes.
// BENCH_RECORDS sets the corpus size (default 10,000).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { detect, KINDS, normaliseName, type Kind } from '../src/discover/detectors.ts';
import { decoyRecord, LABELS, locales, record, valuesAt } from './discover-corpus.ts';
import { Profiler } from '../src/discover/profile.ts';
import { allowedPath, JsonGuard } from '../src/discover/json-guard.ts';
import { scanJson } from '../src/json-bytes/scan.ts';
import { fmt, ratio } from './measure.ts';

const N = Number(process.env.BENCH_RECORDS ?? 10_000);

const corpus = Array.from({ length: N }, (_, i) => record(i));

// precision and recall per detector, value by value, each value judged in its field's context
const counts = new Map<Kind, { tp: number; fp: number; fn: number }>(KINDS.map((k) => [k, { tp: 0, fp: 0, fn: 0 }]));
for (const r of corpus) {
  for (const [path, label] of Object.entries(LABELS)) {
    const context = { name: normaliseName(path.split('.').at(-1)!.replace('[]', '')), personalNeighbours: path.startsWith('contacts[]') };
    for (const value of valuesAt(r, path)) {
      for (const kind of KINDS) {
        const hit = detect(kind, value, context);
        const c = counts.get(kind)!;
        if (hit && label === kind) c.tp++;
        else if (hit) c.fp++;
        else if (label === kind) c.fn++;
      }
    }
  }
}

// the whole run as `veil discover --file` does it: read the JSON lines, parse, profile
const dir = await mkdtemp(join(tmpdir(), 'veil-bench-discover-'));
const file = join(dir, 'records.jsonl');
await writeFile(file, `${corpus.map((r) => JSON.stringify(r)).join('\n')}\n`);
const bare = async () => {
  const t = performance.now();
  const lines = (await readFile(file, 'utf8')).split('\n').filter(Boolean);
  let keys = 0;
  for (const line of lines) keys += Object.keys(JSON.parse(line) as object).length;
  if (keys === 0) throw new Error('empty corpus');
  return performance.now() - t;
};
const profiled = async () => {
  const t = performance.now();
  const profiler = new Profiler();
  for (const line of (await readFile(file, 'utf8')).split('\n').filter(Boolean)) profiler.add(JSON.parse(line));
  return { ms: performance.now() - t, findings: profiler.findings() };
};
await bare();
await profiled();
const bareMs = await bare();
const { ms, findings } = await profiled();
await rm(dir, { recursive: true, force: true });

console.log(`veil bench:discover — Node ${process.version}, ${fmt(N)} generated records (${locales.length} locales, ${Object.values(LABELS).filter(Boolean).length} labelled personal-data fields, ${Object.values(LABELS).filter((l) => l === null).length} decoy fields)\n`);
console.log('detector        precision   recall    true pos   false pos   false neg');
let met = true;
for (const [kind, c] of counts) {
  const precision = c.tp / Math.max(1, c.tp + c.fp);
  const recall = c.tp / Math.max(1, c.tp + c.fn);
  if (precision < 0.95 || recall < 0.95) met = false;
  console.log(`${kind.padEnd(16)}${precision.toFixed(4).padEnd(12)}${recall.toFixed(4).padEnd(10)}${fmt(c.tp).padEnd(11)}${fmt(c.fp).padEnd(12)}${fmt(c.fn)}`);
}
const expected = Object.entries(LABELS).filter(([, k]) => k !== null).map(([p, k]) => `${p}:${k}`).sort();
const found = findings.map((f) => `${f.path}:${f.kind}`).sort();
const missed = expected.filter((e) => !found.includes(e));
const extra = found.filter((e) => !expected.includes(e));
console.log(`\nfields reported by the profiler (share ≥ 0.8): ${findings.length}; labelled fields missed: ${missed.length ? missed.join(', ') : 'none'}; decoys reported: ${extra.length ? extra.join(', ') : 'none'}`);
console.log(`profiling ${fmt(N)} records from a JSON-lines file: ${fmt(Math.round(ms))} ms; the bare read and JSON.parse of the same file: ${fmt(Math.round(bareMs))} ms; ${ratio(ms, bareMs)} the baseline`);
console.log(`\ntarget: every detector precision ≥ 0.95 and recall ≥ 0.95 — ${met && missed.length === 0 && extra.length === 0 ? 'met' : 'NOT met'}; 10,000 records in under 10 s — ${ms < 10_000 * (N / 10_000) ? 'met' : 'NOT met'}`);

// the unmapped guard over the corpus' decoys and plain data alone: what it refuses is a false positive
const decoys = Array.from({ length: N }, (_, i) => Buffer.from(JSON.stringify(decoyRecord(i))));
const guard = new JsonGuard([].map(allowedPath), true);
const refused = new Map<string, number>();
let refusedRecords = 0;
const events: number[] = [];
const scanAll = (visitor?: JsonGuard) => {
  const t = performance.now();
  for (const bytes of decoys) {
    visitor?.begin();
    scanJson(bytes, null, events, 0, visitor);
  }
  return performance.now() - t;
};
for (const bytes of decoys) {
  guard.begin();
  scanJson(bytes, null, events, 0, guard);
  if (guard.findings.length > 0) refusedRecords++;
  for (const f of guard.findings) refused.set(`${f.path}:${f.kind}`, (refused.get(`${f.path}:${f.kind}`) ?? 0) + 1);
}
scanAll();
scanAll(guard);
const scanMs = scanAll();
const guardMs = scanAll(guard);
const share = refusedRecords / Math.max(1, N);
// `account` is the corpus' IBAN-shaped decoy: GB, 2 random check digits, WEST, 14 digits — one in
// 97 of them passes ISO 13616's mod-97 check, i.e. is a valid IBAN, which no validator tells from a real one
const notIbanShaped = decoys.filter((bytes) => {
  guard.begin();
  const rest = JSON.parse(bytes.toString()) as Record<string, unknown>;
  delete rest.account;
  scanJson(Buffer.from(JSON.stringify(rest)), null, events, 0, guard);
  return guard.findings.length > 0;
}).length;
console.log(`\nthe unmapped guard over the decoys alone (${Object.values(LABELS).filter((l) => l === null).length} fields, ${fmt(N)} records): ${fmt(refusedRecords)} records refused = ${(share * 100).toFixed(3)}%${refused.size ? `; by path: ${[...refused].map(([k, n]) => `${k} ${fmt(n)}`).join(', ')}` : ''}`);
console.log(`the guard's scan of the ${fmt(N)} decoy records: ${guardMs.toFixed(1)} ms; the bare validating scan of the same bytes: ${scanMs.toFixed(1)} ms; ${ratio(guardMs, scanMs)} the baseline`);
console.log(`without the IBAN-shaped account numbers (UUIDs, order ids, Luhn-invalid numbers, SKUs, versions, timestamps, product names, cities, user names, tracking numbers, amounts): ${fmt(notIbanShaped)} records refused = ${(notIbanShaped / Math.max(1, N) * 100).toFixed(3)}%`);
console.log(`target: the guard refuses ≤ 0.1% of decoy records — ${share <= 0.001 ? 'met' : 'NOT met'} on the whole corpus; ${notIbanShaped / Math.max(1, N) <= 0.001 ? 'met' : 'NOT met'} without the account numbers that are valid IBANs by chance`);

