import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { ProtectPool } from '../../../src/stream/protect/protect-pool.ts';

const codec = new URL('../../../src/stream/protect/chunk-codec.ts', import.meta.url).href;

/** A worker with the pool's protocol: upper-cases values, or misbehaves as `mode` says. */
function fakeWorker(mode: 'upper' | 'exit-on-work' | 'fail') {
  return () =>
    new Worker(
      new URL(
        `data:text/javascript,${encodeURIComponent(`
    import { parentPort } from 'node:worker_threads';
    import { packOutcomes, unpackItems } from ${JSON.stringify(codec)};
    parentPort.on('message', ({ id, items }) => {
      const list = unpackItems(items);
      if (${JSON.stringify(mode)} === 'exit-on-work' && list.length) process.exit(3);
      if (${JSON.stringify(mode)} === 'fail' && list.length) return parentPort.postMessage({ id, error: { name: 'StreamError', code: 'REGISTRY_UNAVAILABLE', retriable: true } });
      const outcomes = packOutcomes(list.map((i) => i.value === null ? { code: 'RECORD_MALFORMED' } : { key: i.key, value: Buffer.from(i.value.toString().toUpperCase()) }));
      parentPort.postMessage({ id, outcomes }, [outcomes.data]);
    });`)}`,
      ),
    );
}

/**
 * A worker that tags values with the configuration file it binds under: workerData's at start,
 * a reload's after it. `refuseReload` answers a reload with a failure.
 */
function taggingWorker(refuseReload: () => boolean) {
  return (configFile: string | undefined) =>
    new Worker(
      new URL(
        `data:text/javascript,${encodeURIComponent(`
    import { parentPort, workerData } from 'node:worker_threads';
    import { packOutcomes, unpackItems } from ${JSON.stringify(codec)};
    let tag = workerData.configFile;
    parentPort.on('message', ({ id, items, reload }) => {
      if (reload) {
        if (workerData.refuse) return parentPort.postMessage({ id, error: { name: 'VeilError', code: 'KEY_UNAVAILABLE', retriable: false } });
        tag = reload.configFile ?? tag;
        const empty = packOutcomes([]);
        return parentPort.postMessage({ id, outcomes: empty }, [empty.data]);
      }
      const outcomes = packOutcomes(unpackItems(items).map((i) => ({ key: i.key, value: Buffer.from(tag + ':' + i.value) })));
      parentPort.postMessage({ id, outcomes }, [outcomes.data]);
    });`)}`,
      ),
      { workerData: { configFile: configFile ?? 'start', refuse: refuseReload() } },
    );
}

describe('ProtectPool (real worker threads)', () => {
  const pools: ProtectPool[] = [];
  afterEach(async () => {
    for (const p of pools.splice(0)) await p.close();
  });

  it('protects chunks on workers, in order within a chunk, spread over the workers', async () => {
    const pool = new ProtectPool(2, fakeWorker('upper'));
    pools.push(pool);
    await pool.ready();
    const chunks = Array.from({ length: 8 }, (_, c) =>
      Array.from({ length: 50 }, (_, i) => ({ topic: 'clean', key: Buffer.from(`k${i}`), value: i === 7 ? null : Buffer.from(`v${c}.${i}`) })),
    );
    const results = await Promise.all(chunks.map((chunk) => pool.protectChunk(chunk)));
    results.forEach((outcomes, c) => {
      expect(outcomes).toHaveLength(50);
      expect(outcomes[7]).toEqual({ code: 'RECORD_MALFORMED' });
      expect(outcomes[3]).toEqual({ key: Buffer.from('k3'), value: Buffer.from(`V${c}.3`) });
    });
  });

  it('a worker that dies fails its chunk as retriable and is replaced', async () => {
    let started = 0;
    const pool = new ProtectPool(1, () => (started++ === 0 ? fakeWorker('exit-on-work')() : fakeWorker('upper')()));
    pools.push(pool);
    await pool.ready();
    await expect(pool.protectChunk([{ topic: 't', key: null, value: Buffer.from('a') }])).rejects.toMatchObject({
      name: 'StreamError',
      code: 'TRANSACTION_ABORTED',
      retriable: true,
    });
    await expect(pool.protectChunk([{ topic: 't', key: null, value: Buffer.from('a') }])).resolves.toEqual([{ key: null, value: Buffer.from('A') }]);
    expect(started).toBe(2);
  });

  it("a worker's failure keeps the registry's retriable code and carries no value", async () => {
    const pool = new ProtectPool(1, fakeWorker('fail'));
    pools.push(pool);
    await pool.ready();
    const error = await pool.protectChunk([{ topic: 't', key: null, value: Buffer.from('secret@example.com') }]).catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'REGISTRY_UNAVAILABLE', retriable: true });
    expect((error as Error).message).not.toContain('secret');
  });

  it('reload: every worker binds under the new file before later chunks; one that cannot is replaced by a worker started on it', async () => {
    let started = 0;
    const pool = new ProtectPool(
      2,
      taggingWorker(() => started++ === 1),
    );
    pools.push(pool);
    await pool.ready();
    const tags = async () =>
      (await Promise.all([0, 1, 2, 3].map(() => pool.protectChunk([{ topic: 't', key: null, value: Buffer.from('a') }])))).map((o) =>
        String((o[0] as { value: Buffer }).value),
      );
    expect(new Set(await tags())).toEqual(new Set(['start:a']));
    await pool.reload({ keys: true, configFile: 'v2.yaml' });
    // the second worker refused: it is terminated and a third starts on v2.yaml
    await expect.poll(() => started).toBe(3);
    expect(new Set(await tags())).toEqual(new Set(['v2.yaml:a']));
  });

  it("release: a chunk's outcome buffer goes back to its worker, which packs later outcomes into it; the released bytes are detached", async () => {
    // packs into the buffers it is given back (SpareBuffers, as src/app/protect-thread.ts does), and says which it used
    const pool = new ProtectPool(
      1,
      () =>
        new Worker(
          new URL(
            `data:text/javascript,${encodeURIComponent(`
      import { parentPort } from 'node:worker_threads';
      import { packOutcomes, SpareBuffers, unpackItems } from ${JSON.stringify(codec)};
      const spares = new SpareBuffers();
      let given = 0;
      parentPort.on('message', ({ id, items, recycle }) => {
        if (recycle) { given++; return spares.give(recycle); }
        const outcomes = packOutcomes(unpackItems(items ?? { topics: [], data: new ArrayBuffer(0) }).map((i) => ({ key: null, value: Buffer.from(given + ':' + i.value) })), spares);
        parentPort.postMessage({ id, outcomes }, [outcomes.data]);
      });`)}`,
          ),
        ),
    );
    pools.push(pool);
    await pool.ready();
    const chunk = (v: string) => [{ topic: 't', key: null, value: Buffer.from(v) }];
    const first = await pool.protectChunk(chunk('abc'));
    const value = (first[0] as { value: Buffer }).value;
    expect(String(value)).toBe('0:abc');
    pool.release(first);
    expect(value.length).toBe(0);
    expect((value.buffer as ArrayBuffer).detached).toBe(true);
    pool.release(first); // twice: nothing more happens
    pool.release([{ key: null, value: Buffer.from("not the pool's") }]);
    const second = await pool.protectChunk(chunk('de'));
    expect(String((second[0] as { value: Buffer }).value)).toBe('1:de');
  });
});
