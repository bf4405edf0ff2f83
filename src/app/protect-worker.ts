import { parentPort, workerData } from 'node:worker_threads';
import { packOutcomes, unpackItems } from '../stream/chunk-codec.ts';
import type { WorkerReply, WorkerRequest } from '../stream/protect-pool.ts';
import { RecordProtector } from '../stream/record-protector.ts';
import { openEngine } from './open-engine.ts';
import { serdes } from './pipeline-serde.ts';

/**
 * A protection worker thread of `veil stream protect` (ProtectPool): it opens the configuration
 * and the keystore itself — key bytes never cross threads — binds its pipeline's fields and
 * protects the chunks it is sent. Replies carry outcomes or a failure's name and code, never a value.
 */
export interface ProtectWorkerData {
  configFile: string;
  dataDir: string;
  env: Record<string, string | undefined>;
  pipeline: string;
  registryUrl?: string;
}

const data = workerData as ProtectWorkerData;
const protector = (async () => {
  const { config, engine } = await openEngine({ configFile: data.configFile, dataDir: data.dataDir, env: data.env, now: () => new Date(), provision: false });
  const p = config.pipelines[data.pipeline];
  if (!p) throw new Error(`no pipeline ${data.pipeline}`);
  return new RecordProtector({ name: data.pipeline, config: p, engine, serde: await serdes(data.registryUrl)(p) });
})();

parentPort!.on('message', (request: WorkerRequest) => {
  void (async (): Promise<WorkerReply> => {
    try {
      const outcomes = packOutcomes(await (await protector).protectChunk(unpackItems(request.items)));
      return { id: request.id, outcomes };
    } catch (e) {
      const err = e as { name?: string; code?: string; retriable?: boolean };
      return { id: request.id, error: { name: err.name ?? 'Error', ...(typeof err.code === 'string' ? { code: err.code } : {}), retriable: err.retriable ?? true } };
    }
  })().then((reply) => parentPort!.postMessage(reply, 'outcomes' in reply ? [reply.outcomes] : []));
});
