// Part of npm run bench:subjects: protect and unprotect values/s under keys scoped to the data
// subject — 1,000 distinct subjects per 1,000-value batch, one request per subject as a caller
// sends them (POST /transform: a Subject evidence per processing context), the subjects' keys
// fetched from the local store (fetchSubjectKeys) then the engine run — with the store's handle
// cache warm (every subject cached) and cold (cache size 0: each batch reads, unwraps and derives
// again), beside two shared-key baselines in the same run: the same 1,000 values in one request
// (what a caller without subjects sends), and in the subjects' shape — one request per value, each
// its own processing context, the key shared — which isolates what the keys per subject cost from
// what the shape costs. Each table on the native core (what veil runs) and on the JavaScript
// engine's primitives (the oracle), in the same run.
import { createCipheriv, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  compileConfigText,
  Engine,
  JS_PRIMITIVES,
  MemoryKeyProvider,
  KEY_TYPES,
  SecretKey,
  type Primitives,
  type TransformRequest,
} from '../src/engine/index.ts';
import { nativePrimitives } from '../src/native/index.ts';
import { unsafe } from '@noble/ciphers/aes.js';
import { LocalKeystore } from '../src/keystore/local-keystore.ts';
import { fetchSubjectKeys, openSubjectKeyStore, type SubjectKeyStore } from '../src/subjects/index.ts';
import { fmt, opsPerSecond, ratio } from './measure.ts';

const CONFIG = `
version: 1
keys:
  person-siv: { type: aes-siv, scope: subject }
  shared-siv: { type: aes-siv }
  person-gcm: { type: aes-gcm, scope: subject }
  shared-gcm: { type: aes-gcm }
sequences:
  subject-siv: { steps: [{ type: aes-siv, key: person-siv }] }
  shared-siv: { steps: [{ type: aes-siv, key: shared-siv }] }
  subject-gcm: { steps: [{ type: aes-gcm, key: person-gcm }] }
  shared-gcm: { steps: [{ type: aes-gcm, key: shared-gcm }] }
classes:
  P:
    properties:
      email: { protect: subject-siv }
      emailShared: { protect: shared-siv }
      name: { protect: subject-gcm }
      nameShared: { protect: shared-gcm }
rightsContexts:
  all: { evidences: { Role: all }, grants: [{ actions: [Protect, Unprotect], fields: ['*'] }] }
processingContexts:
  protect: { evidences: { Action: Protect } }
  unprotect: { evidences: { Action: Unprotect } }
`;

const BATCH = 1000;
const who = { subject: 'bench', roles: ['all'] };
const subjectId = (i: number) => `cust-${i}`;
const valueOf = (i: number) => `person.${i}@example.org`;

/** One request per subject (its own processing context naming it), one value each. */
function perSubject(action: string, property: string, values: readonly string[]): TransformRequest {
  const rights = randomUUID();
  const contexts = values.map(() => randomUUID());
  return {
    rightsContexts: [{ guid: rights, evidences: [{ name: 'Role', value: 'all' }] }],
    processingContexts: contexts.map((guid, i) => ({
      guid,
      evidences: [
        { name: 'Action', value: action },
        { name: 'Subject', value: subjectId(i) },
      ],
    })),
    requests: values.map((value, i) => ({
      guid: randomUUID(),
      rightsContext: rights,
      processingContext: contexts[i]!,
      instances: [{ className: 'P', propertyName: property, value }],
    })),
  };
}

/** The same values in one request under a shared key: what a caller without subjects sends. */
function oneRequest(action: string, property: string, values: readonly string[]): TransformRequest {
  const [rights, processing] = [randomUUID(), randomUUID()];
  return {
    rightsContexts: [{ guid: rights, evidences: [{ name: 'Role', value: 'all' }] }],
    processingContexts: [{ guid: processing, evidences: [{ name: 'Action', value: action }] }],
    requests: [
      {
        guid: randomUUID(),
        rightsContext: rights,
        processingContext: processing,
        instances: values.map((value) => ({ className: 'P', propertyName: property, value })),
      },
    ],
  };
}

/** A window's length: 300 ms; the bench's short form (test/bench/bench-smoke.test.ts) sets less. */
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 300);

/**
 * The median of 5 windows of WINDOW_MS each, after one of warm-up: this machine's neighbours
 * move a single window's rate by up to 2× from one run to the next; every column is measured alike.
 */
async function valuesPerSecond(batch: () => Promise<unknown> | unknown, ms = WINDOW_MS): Promise<number> {
  const window = async () => {
    let batches = 0;
    const start = performance.now();
    while (performance.now() - start < ms) {
      await batch();
      batches++;
    }
    return (batches * BATCH) / ((performance.now() - start) / 1000);
  };
  await window();
  const rates: number[] = [];
  for (let i = 0; i < 5; i++) rates.push(await window());
  return rates.sort((a, b) => a - b)[2]!;
}

async function run(engine: Engine, store: SubjectKeyStore, body: TransformRequest): Promise<string[]> {
  const plan = engine.plan(body, who);
  const ring = await fetchSubjectKeys(
    store,
    plan.requests.map((r) => r.subject),
    engine.returningSubjects,
  );
  return engine.execute(plan, ring).responses.flatMap((r) => r.instances.map((x) => x.value));
}

export async function subjectTransforms(): Promise<void> {
  const config = compileConfigText(CONFIG).config!;
  const keys = new MemoryKeyProvider();
  for (const ref of config.keys.values())
    if (!ref.scope && !keys.info(ref.id))
      keys.add(ref.id, ref.type as 'aes-siv', randomBytes(KEY_TYPES[ref.type as 'aes-siv'].sizes[0]), new Date().toISOString());
  const dir = await mkdtemp(join(tmpdir(), 'veil-bench-subject-transforms-'));
  const master = SecretKey.fromBytes(randomBytes(32));
  const open = async (cacheSize: number) =>
    openSubjectKeyStore({ keystore: await LocalKeystore.open({ dataDir: dir, masterKey: master }), dataDir: dir, cacheSize });
  const warm = await open(BATCH * 2);
  const cold = await open(0);
  const clear = Array.from({ length: BATCH }, (_, i) => valueOf(i));
  let sharedSiv = 0;
  for (const [name, primitives] of [
    ['the native core', nativePrimitives()],
    ['the JavaScript engine', JS_PRIMITIVES],
  ] as [string, Primitives][]) {
    console.log(`\n— on ${name} —`);
    const engine = new Engine({ config, keys, primitives });
    await requestFigures(engine, warm, cold, clear);
    const bound = await boundFigures(engine, warm, cold, clear);
    if (primitives === JS_PRIMITIVES) sharedSiv = bound;
  }
  perKeyFloor(sharedSiv, Buffer.byteLength(valueOf(BATCH - 1)));
  await Promise.all([warm.close(), cold.close()]);
  await rm(dir, { recursive: true, force: true });
}

/** POST /transform's shape: 1,000 one-subject requests beside the shared key in one request and in the same shape. */
async function requestFigures(engine: Engine, warm: SubjectKeyStore, cold: SubjectKeyStore, clear: readonly string[]): Promise<void> {
  console.log(
    `\nprotect and unprotect with subject keys: ${fmt(BATCH)} distinct subjects per ${fmt(BATCH)}-value batch (plan, fetch the subjects' keys, run), beside shared keys in one request of ${fmt(BATCH)} values and in the subjects' shape (${fmt(BATCH)} one-value requests)`,
  );
  console.log('field (step)      action      shared values/s   subject warm/s  ratio   subject cold/s  ratio   shared, same shape/s  warm/that');
  const ceilings: number[] = [];
  for (const [label, scoped, shared] of [
    ['email (aes-siv)', 'email', 'emailShared'],
    ['name (aes-gcm)', 'name', 'nameShared'],
  ] as const) {
    const sharedOut = await run(engine, warm, oneRequest('Protect', shared, clear));
    const subjectOut = await run(engine, warm, perSubject('Protect', scoped, clear));
    const rows: [string, number, number, number, number][] = [];
    for (const action of ['Protect', 'Unprotect'] as const) {
      const [sharedIn, subjectIn] = action === 'Protect' ? [clear, clear] : [sharedOut, subjectOut];
      const base = await valuesPerSecond(() => run(engine, warm, oneRequest(action, shared, sharedIn)));
      const hot = await valuesPerSecond(() => run(engine, warm, perSubject(action, scoped, subjectIn)));
      const chill = await valuesPerSecond(() => run(engine, cold, perSubject(action, scoped, subjectIn)));
      const shaped = await valuesPerSecond(() => run(engine, warm, perSubject(action, shared, sharedIn)));
      rows.push([action, base, hot, chill, shaped]);
      ceilings.push(shaped / base);
    }
    for (const [action, base, hot, chill, shaped] of rows) {
      console.log(
        `${label.padEnd(17)} ${action.padEnd(10)} ${fmt(base).padStart(16)} ${fmt(hot).padStart(16)}  ${ratio(hot, base).padStart(5)} ${fmt(chill).padStart(16)}  ${ratio(chill, base).padStart(5)} ${fmt(shaped).padStart(21)}  ${ratio(hot, shaped).padStart(9)}`,
      );
    }
  }
  // a Subject evidence belongs to a processing context, so 1,000 subjects are 1,000 requests: what
  // that shape costs with a shared key bounds the subject ratio above, however cheap the keys get
  console.log(
    `the subjects' shape alone (the shared key, one request per value) runs at ${Math.min(...ceilings).toFixed(2)}–${Math.max(...ceilings).toFixed(2)}× one request of the same values: the ceiling of the warm ratio on this path, whatever a subject's key costs`,
  );
}

/**
 * What a pipeline does (bound once, no request to plan): a chunk of 1,000 records of 1,000
 * subjects — their keys fetched at once, each value run under its subject — beside the same
 * values through the shared key's bound transform in one batch.
 */
async function boundFigures(engine: Engine, warm: SubjectKeyStore, cold: SubjectKeyStore, clear: readonly string[]): Promise<number> {
  const bind = (property: string) =>
    engine.bind({
      identity: who,
      rightsEvidences: [{ name: 'Role', value: 'all' }],
      processingEvidences: [{ name: 'Action', value: 'Protect' }],
      fields: [{ className: 'P', propertyName: property }],
    }).transforms[0]!;
  const needs = clear.map((_, i) => ({ id: subjectId(i), create: true }));
  console.log(
    `\nbound transforms (a pipeline's chunk): ${fmt(BATCH)} values of ${fmt(BATCH)} subjects, keys fetched per chunk, each value under its subject, beside one shared-key batch`,
  );
  console.log('field (step)      shared values/s   subject warm/s  ratio   subject cold/s  ratio');
  let sharedSiv = 0;
  for (const [label, scoped, shared] of [
    ['email (aes-siv)', 'email', 'emailShared'],
    ['name (aes-gcm)', 'name', 'nameShared'],
  ] as const) {
    const [scopedChain, sharedChain] = [bind(scoped), bind(shared)];
    const perSubjectChunk = (store: SubjectKeyStore) => async () => {
      const ring = await fetchSubjectKeys(store, needs, 'new-key');
      clear.forEach((value, i) => engine.withSubject(subjectId(i), ring, () => scopedChain(value)));
    };
    const base = await valuesPerSecond(() => sharedChain.many(clear));
    if (scoped === 'email') sharedSiv = base;
    const hot = await valuesPerSecond(perSubjectChunk(warm));
    const chill = await valuesPerSecond(perSubjectChunk(cold));
    console.log(
      `${label.padEnd(17)} ${fmt(base).padStart(16)} ${fmt(hot).padStart(16)}  ${ratio(hot, base).padStart(5)} ${fmt(chill).padStart(16)}  ${ratio(chill, base).padStart(5)}`,
    );
  }
  return sharedSiv;
}

/**
 * What a key per value costs at the least, whatever the code around it: the value's own AES
 * blocks, one at a time under its own key — on @noble/ciphers' round function (the engine's
 * per-key path) or a node:crypto cipher already keyed (a native call per block run) — beside a
 * shared key, whose batch runs the same block of 1,000 values in one native call. AES-SIV of a
 * value of n bytes (n ≥ 16) takes ⌈n/16⌉ CMAC blocks then ⌈n/16⌉ CTR blocks, the CTR pass
 * under the tag the CMAC made (two dependent passes); nothing else of a protect is counted.
 */
function perKeyFloor(sharedSiv: number, bytes: number): void {
  const keys = Array.from({ length: BATCH }, () => randomBytes(32));
  // the round function the engine's per-key AES (AesBlock) runs, on expanded keys
  const js = keys.map((k) => unsafe.expandKeyLE(Uint8Array.from(k)));
  const jsBlocks = opsPerSecond((i) => unsafe.encrypt(js[i % BATCH]!, i, 1, 2, 3));
  const native = keys.map((k) => createCipheriv('aes-256-ecb', k, null).setAutoPadding(false));
  const run = Buffer.alloc(16 * Math.ceil(bytes / 16));
  const nativeRuns = opsPerSecond((i) => native[i % BATCH]!.update(run));
  const blocks = 2 * Math.ceil(bytes / 16);
  const floor = Math.max(jsBlocks / blocks, nativeRuns / 2);
  const us = (rate: number) => (1e6 / rate).toFixed(3);
  console.log(
    `\nthe floor of a key per value (AES-256, 1,000 keys in turn): one block on noble's round function ${us(jsBlocks)} µs; one keyed node:crypto call over a value's ${blocks / 2} blocks ${us(nativeRuns)} µs`,
  );
  console.log(
    `AES-SIV of a ${bytes}-byte value under its own key: at least ${blocks} blocks one at a time or 2 dependent native calls — ${us(floor)} µs, ${fmt(floor)} values/s with nothing else done: ${ratio(floor, sharedSiv)} the bound shared-key AES-SIV rate above (which includes all of its own work)`,
  );
}

if (import.meta.filename === process.argv[1]) await subjectTransforms();
