import { parentPort, workerData } from 'node:worker_threads';
import { Engine } from '../engine/index.ts';
import { packOutcomes, unpackItems } from '../stream/chunk-codec.ts';
import type { WorkerReply, WorkerRequest } from '../stream/protect-pool.ts';
import { RecordProtector } from '../stream/record-protector.ts';
import { rewrapPipeline, type RewrapSpec } from '../stream/rewrap-pipeline.ts';
import { requireConfig, type VeilConfig } from './config-file.ts';
import { requireKeys } from './config-keys.ts';
import { openEngine } from './open-engine.ts';
import { serdes } from './pipeline-serde.ts';

/**
 * A protection worker thread of `veil stream protect` (ProtectPool): it opens the configuration
 * and the keystore itself — key bytes never cross threads — binds its pipeline's fields and
 * protects the chunks it is sent. Replies carry outcomes or a failure's name and code, never a value.
 * A reload request re-reads the keystore (a key rotated elsewhere) and, given a configuration
 * version's file, binds the pipeline anew under it; chunks sent after it wait for it.
 */
export interface ProtectWorkerData {
  configFile: string;
  dataDir: string;
  env: Record<string, string | undefined>;
  pipeline: string;
  registryUrl?: string;
  /** veil stream rewrap: the pipeline's fields re-protected (rewrap-pipeline.ts) */
  rewrap?: RewrapSpec;
}

const data = workerData as ProtectWorkerData;
const opened = openEngine({ configFile: data.configFile, dataDir: data.dataDir, env: data.env, now: () => new Date(), provision: false });

async function bound(config: VeilConfig, engine: Engine): Promise<RecordProtector> {
  const base = config.pipelines[data.pipeline];
  if (!base) throw new Error(`no pipeline ${data.pipeline}`);
  const p = data.rewrap ? rewrapPipeline(data.pipeline, base, data.rewrap) : base;
  const rewrap = data.rewrap ? { rewrap: { unprotectEvidences: data.rewrap.unprotectEvidences } } : {};
  return new RecordProtector({ name: data.pipeline, config: p, engine, serde: await serdes(data.registryUrl)(p), ...rewrap });
}

let protector = opened.then(({ config, engine }) => bound(config, engine));

async function reload(what: NonNullable<WorkerRequest['reload']>): Promise<RecordProtector> {
  const { keystore } = await opened;
  if (what.keys) await keystore.reload();
  if (!what.configFile) return protector;
  const { config } = await requireConfig(what.configFile);
  requireKeys(config.engine, keystore);
  return bound(config, new Engine({ config: config.engine, keys: keystore }));
}

parentPort!.on('message', (request: WorkerRequest) => {
  void (async (): Promise<WorkerReply> => {
    try {
      if (request.reload) {
        // set at once, in message order: a chunk sent after the reload is protected by its result
        protector = reload(request.reload);
        await protector;
        return { id: request.id, outcomes: packOutcomes([]) };
      }
      const outcomes = packOutcomes(await (await protector).protectChunk(unpackItems(request.items!)));
      return { id: request.id, outcomes };
    } catch (e) {
      const err = e as { name?: string; code?: string; retriable?: boolean };
      return { id: request.id, error: { name: err.name ?? 'Error', ...(typeof err.code === 'string' ? { code: err.code } : {}), retriable: err.retriable ?? true } };
    }
  })().then((reply) => parentPort!.postMessage(reply, 'outcomes' in reply ? [reply.outcomes] : []));
});
