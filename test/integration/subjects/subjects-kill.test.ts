import { spawn } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, keyHex } from '../../subjects/helpers.ts';
import { openKafkaStore, processDir, sharedKeySet } from '../../subjects/kafka-helpers.ts';

afterAll(cleanup);

describe('a process killed during an erasure', () => {
  it('leaves every view agreeing on each subject; what it reported erased is erased everywhere; a retried erasure completes', async () => {
    const keySet = await sharedKeySet();
    const topic = `veil.subjects.kill-${randomBytes(4).toString('hex')}`;
    const a = await openKafkaStore(await processDir(keySet), keySet.master, topic);
    const ids = Array.from({ length: 6 }, (_, i) => `killed-${i}@example.com`);
    for (const id of ids) await a.keyFor(id);
    const childDir = await processDir(keySet);
    const child = spawn('scripts/node22', ['test/subjects/erase-child.ts', childDir, topic, JSON.stringify(ids)], {
      env: { ...process.env, VEIL_TEST_MASTER: keySet.masterHex },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d));
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => ((out += d), out.includes('ready\n') && resolve()));
      void exited.then(() => reject(new Error(`the child exited before it was ready: ${err.slice(-2000)}`)));
    });
    // each erasure takes its read-back plus the staleness bound (1 s): kill somewhere in the first few
    const delay = randomInt(0, 4000);
    await new Promise((r) => setTimeout(r, delay));
    child.kill('SIGKILL');
    await exited;
    const reported = [...out.matchAll(/^erased (.+)$/gm)].map((m) => m[1]!);
    const fresh = await openKafkaStore(await processDir(keySet), keySet.master, topic);
    const restarted = await openKafkaStore(childDir, keySet.master, topic);
    await new Promise((r) => setTimeout(r, 300));
    let erasedCount = 0;
    for (const id of ids) {
      const views = await Promise.all([a, fresh, restarted].map((s) => s.existing(id)));
      const states = views.map((v) => (v?.erased ? 'erased' : v ? keyHex(v) : 'none'));
      expect(new Set(states).size, `${id}: views disagree after the kill at ${delay} ms`).toBe(1);
      if (reported.includes(id)) expect(states[0]).toBe('erased');
      if (states[0] === 'erased') erasedCount++;
    }
    expect(erasedCount).toBeGreaterThanOrEqual(reported.length);
    // the erasure is retried on another process: every subject ends erased in every view
    for (const id of ids) await a.erase(id, { by: 'admin', reason: 'retry after the kill' });
    for (const id of ids) for (const s of [a, fresh, restarted]) expect(await s.keyFor(id)).toMatchObject({ erased: true });
    console.log(`kill during erase: killed at ${delay} ms, ${reported.length} erasures reported, ${erasedCount} found erased`);
    await Promise.all([a, fresh, restarted].map((s) => s.close()));
  }, 90_000);
});
