// npm run bench:discover — precision and recall of each `veil discover` detector on a labelled
// corpus this bench generates (faker data of several locales, with decoys: Luhn-invalid numbers,
// order ids, UUIDs, SKUs, version strings, postcodes, product names, other dates, IBAN-shaped
// account numbers with wrong check digits), and the time to profile 10,000
// records from a JSON-lines file beside the bare read-and-parse of the same file (the baseline).
// Then the unmapped guard (the stream's and gateway's) over the decoys alone: the share of records
// it would refuse, by path, and its scan time beside the bare validating scan of the same bytes; and
// the same decoys through the example pipeline's record protection, counting dead letters.
// Then the business corpus (bench/business-corpus.ts: GS1 codes, tracking numbers, cell ids,
// registration numbers, cloud account ids… built from the public standards) through the same
// record protection: the refused share per path and kind, beside the detection rate on personal
// values planted at unmapped paths — at each threshold a pipeline can set.
// BENCH_RECORDS sets the corpus size (default 10,000).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { detect, KINDS, normaliseName, type Kind } from '../src/discover/detectors.ts';
import { decoyRecord, LABELS, locales, record, valuesAt } from './discover-corpus.ts';
import { Profiler } from '../src/discover/profile.ts';
import { allowedPath, JsonGuard } from '../src/drift-guard/json-guard.ts';
import { scanJson } from '../src/json-bytes/scan.ts';
import { fmt, ratio } from './measure.ts';
import { chainFrom } from '../test/helpers/chain-from.ts';
import { mappings } from '../src/stream/serde/index.ts';
import { protectJsonValues } from '../src/stream/serde/index.ts';
import type { RecordProtection } from '../src/stream/serde/index.ts';
import { StreamError } from '../src/stream/stream-error.ts';
import { businessKind, businessRecord, planted } from './business-corpus.ts';
import { likelihoodLevel, THRESHOLDS } from '../src/drift-guard/value-kinds.ts';

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

console.log(
  `veil bench:discover — Node ${process.version}, ${fmt(N)} generated records (${locales.length} locales, ${Object.values(LABELS).filter(Boolean).length} labelled personal-data fields, ${Object.values(LABELS).filter((l) => l === null).length} decoy fields)\n`,
);
console.log('detector        precision   recall    true pos   false pos   false neg');
let met = true;
for (const [kind, c] of counts) {
  const precision = c.tp / Math.max(1, c.tp + c.fp);
  const recall = c.tp / Math.max(1, c.tp + c.fn);
  if (precision < 0.95 || recall < 0.95) met = false;
  console.log(`${kind.padEnd(16)}${precision.toFixed(4).padEnd(12)}${recall.toFixed(4).padEnd(10)}${fmt(c.tp).padEnd(11)}${fmt(c.fp).padEnd(12)}${fmt(c.fn)}`);
}
const expected = Object.entries(LABELS)
  .filter(([, k]) => k !== null)
  .map(([p, k]) => `${p}:${k}`)
  .sort();
const found = findings.map((f) => `${f.path}:${f.kind}`).sort();
const missed = expected.filter((e) => !found.includes(e));
const extra = found.filter((e) => !expected.includes(e));
console.log(
  `\nfields reported by the profiler (share ≥ 0.8): ${findings.length}; labelled fields missed: ${missed.length ? missed.join(', ') : 'none'}; decoys reported: ${extra.length ? extra.join(', ') : 'none'}`,
);
console.log(
  `profiling ${fmt(N)} records from a JSON-lines file: ${fmt(Math.round(ms))} ms; the bare read and JSON.parse of the same file: ${fmt(Math.round(bareMs))} ms; ${ratio(ms, bareMs)} the baseline`,
);
console.log(
  `\ntarget: every detector precision ≥ 0.95 and recall ≥ 0.95 — ${met && missed.length === 0 && extra.length === 0 ? 'met' : 'NOT met'}; 10,000 records in under 10 s — ${ms < 10_000 * (N / 10_000) ? 'met' : 'NOT met'}`,
);

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
// the same decoys through the example pipeline's record protection (what a JSON pipeline runs per
// batch: its mapped paths, keys insensitive, the guard at its default, dead-letter), each decoy
// record beside the mapped fields a record of that pipeline has
const mapped = ['email', 'cards[].number', 'profile.name'];
const protection: RecordProtection = {
  maps: mappings(
    mapped,
    mapped.map(() => chainFrom((s: string) => `<${s.length}>`)),
  ),
  missing: 'pass',
  foldKeys: true,
  guard: { action: 'dead-letter', allow: [], protect: new Map(), retypes: true },
};
const pipelineRecords = Array.from({ length: N }, (_, i) =>
  Buffer.from(JSON.stringify({ email: 'ann@example.com', cards: [{ number: '4111111111111111' }], profile: { name: 'Ann Lee' }, ...decoyRecord(i) })),
);
const deadLettered = protectJsonValues(pipelineRecords, protection, []).filter((out) => out instanceof StreamError);
const deadShare = deadLettered.length / Math.max(1, N);
console.log(
  `\nthe unmapped guard over the decoys alone (${Object.values(LABELS).filter((l) => l === null).length} fields, ${fmt(N)} records): ${fmt(refusedRecords)} records refused = ${(share * 100).toFixed(3)}%${refused.size ? `; by path: ${[...refused].map(([k, n]) => `${k} ${fmt(n)}`).join(', ')}` : ''}`,
);
console.log(
  `the guard's scan of the ${fmt(N)} decoy records: ${guardMs.toFixed(1)} ms; the bare validating scan of the same bytes: ${scanMs.toFixed(1)} ms; ${ratio(guardMs, scanMs)} the baseline`,
);
console.log(
  `through the example pipeline's record protection (guard at its default): ${fmt(deadLettered.length)} of ${fmt(N)} records dead-lettered = ${(deadShare * 100).toFixed(3)}%${deadLettered.length ? `; by path: ${[...new Set(deadLettered.map((e) => `${(e as StreamError).path}:${(e as StreamError).kind}`))].join(', ')}` : ''}`,
);
console.log(`target: ≤ 0.1% of decoy records refused — ${Math.max(share, deadShare) <= 0.001 ? 'met' : 'NOT met'}`);

// the business corpus and the planted values through the example pipeline's record protection, at each threshold
const business = Array.from({ length: N }, (_, i) => Buffer.from(JSON.stringify(businessRecord(i))));
const plants = Array.from({ length: N }, (_, i) => planted(i));
const plantBytes = plants.map((p) => Buffer.from(JSON.stringify(p.record)));
console.log(
  `\nthe business corpus (${fmt(N)} records: retail orders, shipments, network telemetry, hotel bookings, supplier records, cloud audit events), personal data only at the mapped paths, through the example pipeline's record protection:`,
);
console.log('threshold      refused business records   detected planted values');
let businessMet = false;
for (const threshold of THRESHOLDS) {
  const at = (records: Buffer[]) => protectJsonValues(records, { ...protection, guard: { ...protection.guard!, threshold: likelihoodLevel(threshold) } }, []);
  const refusedBusiness = at(business)
    .map((out, i) => ({ out, i }))
    .filter((r) => r.out instanceof StreamError);
  const byPath = new Map<string, number>();
  for (const { out, i } of refusedBusiness) {
    const key = `${businessKind(i)}: ${(out as StreamError).path}:${(out as StreamError).kind}`;
    byPath.set(key, (byPath.get(key) ?? 0) + 1);
  }
  const outs = at(plantBytes);
  const missedBy = new Map<string, number>();
  let detected = 0;
  outs.forEach((out, i) => {
    const p = plants[i]!;
    if (out instanceof StreamError && out.path === p.path && out.kind === p.kind) detected++;
    else missedBy.set(`${p.path}:${p.kind}`, (missedBy.get(`${p.path}:${p.kind}`) ?? 0) + 1);
  });
  const refusedShare = refusedBusiness.length / N;
  const detectedShare = detected / N;
  if (threshold === 'likely') businessMet = refusedShare <= 0.001 && detectedShare >= 0.99;
  console.log(
    `${threshold.padEnd(15)}${`${fmt(refusedBusiness.length)} = ${(refusedShare * 100).toFixed(3)}%`.padEnd(27)}${fmt(detected)} of ${fmt(N)} = ${(detectedShare * 100).toFixed(2)}%`,
  );
  if (byPath.size)
    console.log(
      `  refused by kind, path and what was found: ${[...byPath]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 12)
        .map(([k, n]) => `${k} ${fmt(n)}`)
        .join('; ')}`,
    );
  if (missedBy.size) console.log(`  planted values missed: ${[...missedBy].map(([k, n]) => `${k} ${fmt(n)}`).join('; ')}`);
}
console.log(
  `target (the default threshold, likely): ≤ 0.1% of business records refused and ≥ 99% of planted values detected — ${businessMet ? 'met' : 'NOT met'}`,
);
