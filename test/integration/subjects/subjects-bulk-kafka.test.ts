import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openKeystore } from '../../../src/app/open-engine.ts';
import { openControlStore, type ControlStore } from '../../../src/control/index.ts';
import { openSubjectKeyStore, subjectStoreSettings, type SubjectKeyStore } from '../../../src/subjects/index.ts';
import { MASTER_KEY_HEX } from '../../helpers/http-service.ts';
import { BROKERS } from '../../helpers/kafka.ts';
import { eventually } from '../../helpers/processes.ts';
import { Children, exited } from '../../helpers/secure-veil.ts';
import { personConfig, subjectCall } from '../../helpers/subject-config.ts';
import { startVeilServe, type VeilProcess } from '../../helpers/veil-process.ts';
import { clientsYaml } from '../../http/support.ts';

// npm test erases 600; npm run test:erase-10k the 10,000
const SUBJECTS = Number(process.env.VEIL_TEST_ERASE_SUBJECTS ?? 600);
// a transform call of one request per subject: 100 keep it under the service's body limit
const PER_CALL = 100;
const run = randomBytes(4).toString('hex');
const ids = Array.from({ length: SUBJECTS }, (_, i) => `bulk-${run}-${i}@example.org`);
// as many more, erased in batches over host B's admin API
const apiIds = Array.from({ length: SUBJECTS }, (_, i) => `api-${run}-${i}@example.org`);
const API_BATCH = Math.min(1000, Math.ceil(SUBJECTS / 10));
const ENV = {
  VEIL_MASTER_KEY: MASTER_KEY_HEX,
  KAFKA_BROKERS: BROKERS.join(','),
  VEIL_CONTROL_STORE: 'kafka',
  VEIL_CONTROL_TOPIC: `veil.control.bulk-${run}`,
  VEIL_SUBJECT_TOPIC: `veil.subjects.bulk-${run}`,
  VEIL_SUBJECT_PARTITIONS: '3',
};
const SECRET = 'desk-secret-0123456789abcdef';
const DPO_SECRET = 'dpo-secret-0123456789abcdef';
const clients = () => clientsYaml({ desk: { secret: SECRET, roles: ['desk'] }, dpo: { secret: DPO_SECRET, roles: ['admin-publisher'] } });
const chunks = <T>(xs: readonly T[], n: number) => Array.from({ length: Math.ceil(xs.length / n) }, (_, i) => xs.slice(i * n, (i + 1) * n));
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

/**
 * Bulk erasure across hosts (issue 43): SUBJECTS subjects with a value protected on host B (a
 * `veil serve` process), erased by `veil subjects erase --from` on its own data dir, SIGKILLed
 * halfway and run again; as many more erased in batches over B's admin API; every value then
 * answers SUBJECT_ERASED on B and on B restarted, every receipt verifies, and a third host (in
 * this process) times when it saw each erasure.
 */
describe(`bulk erasure of ${SUBJECTS} subjects by the command line and ${SUBJECTS} by the admin API over the Kafka subject-key store (real broker, real processes)`, () => {
  let b: VeilProcess;
  let cliDir: string;
  let configFile: string;
  let observer: { store: SubjectKeyStore; control?: ControlStore; dir: string };
  const seen = new Map<string, number>();
  const children = new Children();
  const protectedBy = new Map<string, string>();
  let token = '';

  const call = async (veil: VeilProcess, body: unknown) => {
    const res = await veil.request('/transform', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: JSON.parse(res.text) as Record<string, unknown> };
  };
  const signIn = async (veil: VeilProcess, client = 'desk', secret = SECRET) => {
    const res = await veil.request('/connect/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=client_credentials&client_id=${client}&client_secret=${secret}`,
    });
    return (JSON.parse(res.text) as { access_token: string }).access_token;
  };

  beforeAll(async () => {
    const configText = personConfig({ extra: await clients() });
    b = await startVeilServe({ configText, env: ENV });
    token = await signIn(b);
    for (const batch of chunks([...ids, ...apiIds], PER_CALL)) {
      const reply = await call(
        b,
        subjectCall(
          'Protect',
          batch.map((id) => ({ subject: id, values: [['email', id]] })),
        ),
      );
      expect(reply.status).toBe(200);
      (reply.json.responses as { instances: { value: string }[] }[]).forEach((r, i) => protectedBy.set(batch[i]!, r.instances[0]!.value));
    }
    cliDir = await mkdtemp(join(tmpdir(), 'veil-bulk-cli-'));
    configFile = join(cliDir, 'config.yaml');
    await writeFile(configFile, configText);
    await writeFile(join(cliDir, 'subjects.txt'), `${ids.join('\n')}\n`);
    // the third host: the same key set and topic, in this process, noting when each erasure reached it
    const dir = await mkdtemp(join(tmpdir(), 'veil-bulk-observer-'));
    const control = await openControlStore(ENV, dir);
    const { keystore, lease } = await openKeystore({ dataDir: dir, env: ENV, now: () => new Date(), ...(control ? { control } : {}) });
    lease?.stop();
    const store = await openSubjectKeyStore({ keystore, dataDir: dir, settings: subjectStoreSettings(ENV) });
    store.onChange((c) => void (c.kind === 'erased' && !seen.has(c.ref) && seen.set(c.ref, Date.now())));
    observer = { store, ...(control ? { control } : {}), dir };
  }, 600_000);

  afterAll(async () => {
    await children.killAll();
    await observer?.store.close();
    await observer?.control?.close();
    await b?.stop();
    for (const d of [cliDir, observer?.dir]) if (d) await rm(d, { recursive: true, force: true });
  }, 60_000);

  // batches of a tenth: the SIGKILL lands with some batches done and some not
  const erase = () =>
    children.spawn(
      [
        'subjects',
        'erase',
        '--from',
        join(cliDir, 'subjects.txt'),
        '--batch',
        String(Math.min(1000, Math.ceil(SUBJECTS / 10))),
        '--reason',
        'accounts closed',
        '--data-dir',
        cliDir,
        '--config',
        configFile,
      ],
      { ...ENV, VEIL_LOG_LEVEL: 'warn' },
    );

  it('erases them all through a SIGKILL halfway: the rerun erases the rest and returns every receipt; each host sees each erasure', async () => {
    const started = Date.now();
    const first = erase();
    await eventually(
      'half the subjects erased',
      async () =>
        first
          .stdout()
          .split('\n')
          .filter((l) => l.startsWith('{"line"')).length >=
        SUBJECTS / 2
          ? true
          : undefined,
      600_000,
    );
    first.kill('SIGKILL');
    await exited(first, 30_000);
    const second = erase();
    expect(await exited(second, 900_000)).toBe(0);
    const tookMs = Date.now() - started;
    const lines = second
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{"line"'))
      .map((l) => JSON.parse(l) as { line: number; subject: string; alreadyErased: boolean; receipt: string; error?: unknown });
    expect(lines).toHaveLength(SUBJECTS);
    expect(lines.filter((l) => l.error)).toEqual([]);
    const before = lines.filter((l) => l.alreadyErased).length;
    expect(before).toBeGreaterThanOrEqual(SUBJECTS / 2);
    expect(before).toBeLessThan(SUBJECTS);
    // every erasure seen by the third host, and how long after its receipt's time
    await eventually('every erasure seen by the third host', async () => (lines.every((l) => seen.has(l.subject)) ? true : undefined), 60_000);
    const erasedAt = new Map(
      lines.map((l) => [l.subject, Date.parse((JSON.parse(Buffer.from(l.receipt.split('.')[1]!, 'base64url').toString()) as { erasedAt: string }).erasedAt)]),
    );
    const lags = lines.map((l) => Math.max(0, seen.get(l.subject)! - erasedAt.get(l.subject)!)).sort((x, y) => x - y);
    console.log(
      `bulk erasure: ${SUBJECTS} subjects in ${(tookMs / 1000).toFixed(1)} s (two runs, SIGKILL between), ${before} erased by the first; seen by a third host p50 ${percentile(lags, 0.5)} ms, max ${lags.at(-1)} ms`,
    );
    // the third host follows the store as it is written, not at its next start: half the erasures
    // within 2 s, and the slowest within the time the erasing itself took (a baseline taken in this
    // run, so the bound holds on a loaded machine, where a wall-clock maximum measured the machine)
    expect(percentile(lags, 0.5)).toBeLessThan(2000);
    expect(lags.at(-1)).toBeLessThan(Math.max(2000, tookMs));
    // every receipt verifies in one call
    await writeFile(join(cliDir, 'receipts.jsonl'), second.stdout());
    const verify = children.spawn(['subjects', 'verify-receipt', join(cliDir, 'receipts.jsonl'), '--data-dir', cliDir], { ...ENV, VEIL_LOG_LEVEL: 'warn' });
    expect(await exited(verify, 300_000)).toBe(0);
    expect(verify.output()).toMatch(new RegExp(`${SUBJECTS} valid, 0 not valid`));
  }, 1_800_000);

  it(`erases ${SUBJECTS} more in batches of ${API_BATCH} over host B's admin API (POST /admin/subjects/erase-batch): a receipt each, each erasure seen by the third host`, async () => {
    const dpo = await signIn(b, 'dpo', DPO_SECRET);
    const started = Date.now();
    const receipts: string[] = [];
    for (const batch of chunks(apiIds, API_BATCH)) {
      const res = await b.request('/admin/subjects/erase-batch', {
        method: 'POST',
        headers: { authorization: `Bearer ${dpo}`, 'content-type': 'application/json' },
        body: JSON.stringify({ subjects: batch, reason: 'accounts closed' }),
      });
      expect(res.status, res.text.slice(0, 300)).toBe(200);
      const { results } = JSON.parse(res.text) as {
        results: { receipt?: string; claims?: { sub: string; erasedAt: string; alreadyErased: boolean }; error?: unknown }[];
      };
      expect(results).toHaveLength(batch.length);
      expect(results.filter((r) => r.error)).toEqual([]);
      for (const r of results) receipts.push(r.receipt!);
    }
    const tookMs = Date.now() - started;
    const claims = receipts.map(
      (r) => JSON.parse(Buffer.from(r.split('.')[1]!, 'base64url').toString()) as { sub: string; erasedAt: string; alreadyErased: boolean },
    );
    expect(claims.filter((c) => c.alreadyErased)).toEqual([]);
    expect(new Set(claims.map((c) => c.sub)).size).toBe(SUBJECTS);
    await eventually('every API erasure seen by the third host', async () => (claims.every((c) => seen.has(c.sub)) ? true : undefined), 60_000);
    const lags = claims.map((c) => Math.max(0, seen.get(c.sub)! - Date.parse(c.erasedAt))).sort((x, y) => x - y);
    console.log(
      `bulk erasure over the admin API: ${SUBJECTS} subjects in ${(tookMs / 1000).toFixed(1)} s (${Math.ceil(SUBJECTS / API_BATCH)} calls); seen by a third host p50 ${percentile(lags, 0.5)} ms, max ${lags.at(-1)} ms`,
    );
    // the third host follows the store as it is written, not at its next start: half the erasures
    // within 2 s, and the slowest within the time the erasing itself took (a baseline taken in this
    // run, so the bound holds on a loaded machine, where a wall-clock maximum measured the machine)
    expect(percentile(lags, 0.5)).toBeLessThan(2000);
    expect(lags.at(-1)).toBeLessThan(Math.max(2000, tookMs));
    // every receipt verifies in one call, against the shared key set
    await writeFile(join(cliDir, 'api-receipts.txt'), `${receipts.join('\n')}\n`);
    const verify = children.spawn(['subjects', 'verify-receipt', join(cliDir, 'api-receipts.txt'), '--data-dir', cliDir], { ...ENV, VEIL_LOG_LEVEL: 'warn' });
    expect(await exited(verify, 300_000)).toBe(0);
    expect(verify.output()).toMatch(new RegExp(`${SUBJECTS} valid, 0 not valid`));
  }, 1_800_000);

  it('every value answers SUBJECT_ERASED on host B, and on B restarted on its data dir', async () => {
    const check = async (veil: VeilProcess) => {
      for (const batch of chunks([...ids, ...apiIds], PER_CALL)) {
        const reply = await call(
          veil,
          subjectCall(
            'Unprotect',
            batch.map((id) => ({ subject: id, values: [['email', protectedBy.get(id)!]] })),
          ),
        );
        expect(reply.status).toBe(422);
        expect((reply.json.errors as { code: string }[]).map((e) => e.code)).toEqual(batch.map(() => 'SUBJECT_ERASED'));
      }
    };
    await check(b);
    const dataDir = b.dataDir;
    await b.stop();
    b = await startVeilServe({ configText: personConfig({ extra: await clients() }), env: ENV, dataDir });
    token = await signIn(b);
    await check(b);
    const all = children.all.map((c) => c.output()).join('\n') + b.output();
    for (const id of [...ids.slice(0, 50), ...apiIds.slice(0, 50)]) expect(all).not.toContain(id);
  }, 900_000);
});
