import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { expect, it } from 'vitest';
import { offsetsOf, sivKeyring } from '../../src/native/index.ts';

/**
 * The stream's protection pool runs the engine in worker threads: the addon must load in each
 * (napi-rs registers it per environment) with keyrings of its own, and a worker exiting must not
 * take the main thread's keys with it.
 */
it('loads in worker threads beside the main thread, each with its own keyrings, giving the same outputs', async () => {
  const key = randomBytes(64);
  const values = Buffer.from('alice@example.combob@example.org');
  const offsets = offsetsOf([17, 15]);
  const ring = sivKeyring();
  ring.add('k', key);
  const expected = ring.sealMany('k', [Buffer.from('Customer.email')], values, offsets).toString('hex');
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    const { SivKeyring } = require(workerData.addon);
    const ring = new SivKeyring();
    ring.add('k', Buffer.from(workerData.key, 'hex'));
    const sealed = ring.sealMany('k', [Buffer.from('Customer.email')], Buffer.from(workerData.values, 'hex'), Uint32Array.from(workerData.offsets));
    parentPort.postMessage({ sealed: sealed.toString('hex'), size: ring.size });`;
  const addon = new URL('../../native/veil-native.node', import.meta.url).pathname;
  const run = () =>
    new Promise<{ sealed: string; size: number }>((resolve, reject) => {
      const worker = new Worker(source, { eval: true, workerData: { addon, key: key.toString('hex'), values: values.toString('hex'), offsets: [...offsets] } });
      let answer: { sealed: string; size: number } | undefined;
      worker.once('message', (m: { sealed: string; size: number }) => (answer = m));
      worker.once('error', reject);
      // resolved once the worker has exited (its environment and keyrings torn down), with what it answered
      worker.once('exit', (code) => (code === 0 && answer ? resolve(answer) : reject(new Error(`worker exited ${code} without an answer`))));
    });
  const answers = await Promise.all([run(), run(), run()]);
  expect(answers).toEqual([1, 2, 3].map(() => ({ sealed: expected, size: 1 })));
  // the workers have exited: the main thread's keyring still holds and uses its key
  expect(ring.sealMany('k', [Buffer.from('Customer.email')], values, offsets).toString('hex')).toBe(expected);
  expect(ring.size).toBe(1);
});
