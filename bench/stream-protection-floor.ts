// What bench:stream's protection costs with no Kafka at all: the pipeline's RecordProtector on the
// same JSON records, in this thread, warm — the work a protection thread does per record (the
// JSON scan, the unmapped guard, three values' crypto, the splice), less the hand-over between
// threads. Beside the bare copy's whole CPU per record it bounds the CPU-per-record ratio any
// pipeline design can reach on this machine: veil does the bare copy's Kafka work and this.
// Measured on the native core (what veil runs) and on the JavaScript engine (the oracle), same records.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngine } from '../src/app/open-engine.ts';
import { RecordProtector, serdes } from '../src/stream/protect/index.ts';
import { Engine, JS_PRIMITIVES } from '../src/engine/index.ts';

export interface ProtectionFloor {
  /** CPU µs per record on the native core (the engine veil opens) */
  native: number;
  /** the same on the JavaScript engine's primitives */
  js: number;
}

/** CPU µs per record of protectChunk over `values` in chunks of 1,000, on each engine: the median of 5 rounds after 2 of warm-up. */
export async function protectionFloor(configText: string, values: readonly Buffer[]): Promise<ProtectionFloor> {
  const dataDir = await mkdtemp(join(tmpdir(), 'veil-bench-floor-'));
  try {
    const configFile = join(dataDir, 'config.yaml');
    await writeFile(configFile, configText);
    const { config, engine, keystore } = await openEngine({
      configFile,
      dataDir,
      env: { VEIL_MASTER_KEY: 'e'.repeat(64) },
      now: () => new Date(),
      provision: true,
    });
    const pipeline = config.pipelines.bench!;
    const serde = await serdes(undefined)(pipeline);
    const floorOf = (on: Engine) => cpuPerRecord(new RecordProtector({ name: 'bench', config: pipeline, engine: on, serde }), values);
    const native = await floorOf(engine);
    const js = await floorOf(new Engine({ config: config.engine, keys: keystore, primitives: JS_PRIMITIVES }));
    return { native, js };
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function cpuPerRecord(protector: RecordProtector, values: readonly Buffer[]): Promise<number> {
  const chunks: { topic: string; key: Buffer; value: Buffer }[][] = [];
  for (let i = 0; i < values.length; i += 1000)
    chunks.push(values.slice(i, i + 1000).map((value, j) => ({ topic: 'clean', key: Buffer.from(`k${i + j}`), value })));
  const rounds: number[] = [];
  for (let r = 0; r < 7; r++) {
    const before = process.cpuUsage();
    for (const chunk of chunks) {
      const outcomes = await protector.protectChunk(chunk);
      if (outcomes.some((o) => 'code' in o)) throw new Error('a bench record was dead-lettered: the floor would not measure protection');
    }
    const used = process.cpuUsage(before);
    if (r >= 2) rounds.push((used.user + used.system) / values.length);
  }
  return rounds.sort((a, b) => a - b)[2]!;
}
