import { parentPort, workerData } from 'node:worker_threads';
import { Engine } from '../engine/index.ts';
import { packOutcomes, SpareBuffers, unpackItems } from '../stream/protect/index.ts';
import type { WorkerReply, WorkerRequest } from '../stream/protect/index.ts';
import { RecordProtector } from '../stream/protect/index.ts';
import { rewrapPipeline, type RewrapSpec } from '../stream/protect/index.ts';
import { requireConfig, type VeilConfig } from './config-file.ts';
import { requireKeys } from '../keystore/index.ts';
import { openEngine, type OpenedEngine } from './open-engine.ts';
import { serdes } from '../stream/protect/index.ts';
import { registrySettings } from '../stream/registry/index.ts';
import { nativePrimitives } from '../native/index.ts';

/**
 * A protection worker thread of `veil stream protect` (ProtectPool): it opens the configuration
 * and the keystore itself — key bytes never cross threads — binds its pipeline's fields and
 * protects the chunks it is sent. Replies carry outcomes or a failure's name and code, never a value.
 * A reload request re-reads the keystore (a key rotated elsewhere) and, given a configuration
 * version's file, binds the pipeline anew under it; chunks sent after it wait for it. What fails
 * to open or bind (the KMS not answering) is tried again on the next chunk.
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

// opened on first use and again after a failure (a KMS that did not answer): a worker never stays broken
let opened: Promise<OpenedEngine> | undefined;
const open = () =>
  (opened ??= openEngine({ configFile: data.configFile, dataDir: data.dataDir, env: data.env, now: () => new Date(), provision: false }).catch((e: unknown) => {
    opened = undefined;
    throw e;
  }));

async function bound(config: VeilConfig, engine: Engine): Promise<RecordProtector> {
  const base = config.pipelines[data.pipeline];
  if (!base) throw new Error(`no pipeline ${data.pipeline}`);
  const p = data.rewrap ? rewrapPipeline(data.pipeline, base, data.rewrap) : base;
  const rewrap = data.rewrap ? { rewrap: { unprotectEvidences: data.rewrap.unprotectEvidences } } : {};
  // the registry's settings read here again from the same environment: its secrets do not cross threads
  return new RecordProtector({
    name: data.pipeline,
    config: p,
    engine,
    serde: await serdes(registrySettings(data.env, { ...(data.registryUrl ? { url: data.registryUrl } : {}) }))(p),
    ...rewrap,
  });
}

/** the configuration file to bind under, and whether the keystore must be read again first */
let configFile = data.configFile;
let keysStale = false;
/** whether the engine openEngine built is still the one to bind (no reload since) */
let openedIsCurrent = true;
let protector: Promise<RecordProtector> | undefined;

/** The protector, built when there is none (at start, after a reload, after a failure). */
function current(): Promise<RecordProtector> {
  protector ??= (async () => {
    const o = await open();
    // at start the engine openEngine built (and checked the keys of) is the one: not built twice
    if (openedIsCurrent) return bound(o.config, o.engine);
    if (keysStale) await o.keystore.reload();
    keysStale = false;
    const { config } = await requireConfig(configFile);
    requireKeys(config.engine, o.keystore);
    return bound(config, new Engine({ config: config.engine, keys: o.keystore, primitives: nativePrimitives() }));
  })().catch((e: unknown) => {
    protector = undefined;
    throw e;
  });
  return protector;
}

function reload(what: NonNullable<WorkerRequest['reload']>): Promise<RecordProtector> {
  openedIsCurrent = false;
  if (what.keys) keysStale = true;
  if (what.configFile) configFile = what.configFile;
  protector = undefined;
  return current();
}

/** outcome buffers the pool gave back, for the next chunks' outcomes */
const spares = new SpareBuffers();

parentPort!.on('message', (request: WorkerRequest) => {
  if (request.recycle) return spares.give(request.recycle);
  void (async (): Promise<WorkerReply> => {
    try {
      if (request.reload) {
        // set at once, in message order: a chunk sent after the reload is protected by its result
        await reload(request.reload);
        return { id: request.id, outcomes: packOutcomes([]) };
      }
      const outcomes = packOutcomes(await (await current()).protectChunk(unpackItems(request.items!)), spares);
      return { id: request.id, outcomes };
    } catch (e) {
      const err = e as { name?: string; code?: string; retriable?: boolean };
      return {
        id: request.id,
        error: { name: err.name ?? 'Error', ...(typeof err.code === 'string' ? { code: err.code } : {}), retriable: err.retriable ?? true },
      };
    }
  })().then((reply) => parentPort!.postMessage(reply, 'outcomes' in reply ? [reply.outcomes.data] : []));
});
