// bench:stream's Java baseline: the exactly-once consume → produce copy a Java engineer would write
// with Kafka's own client (bench/java/ExactlyOnceCopy.java), compiled with javac against the same
// kafka-clients jar the tests use as their reference (scripts/test-env.sh, from Maven Central) and
// run as a child JVM. A compiled class rather than a single-file source run, so that nothing is
// compiled from source inside the timed JVM; its CPU is the child's own, read from /proc.
import { execFile, execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { kafkaLibs, kafkaLibsDir } from '../test/helpers/kafka-libs.ts';
export { kafkaVersion } from '../test/helpers/kafka-libs.ts';

const root = new URL('..', import.meta.url).pathname;

/**
 * A fixed heap, so the timed run neither grows it nor collects to stay small (the copy holds at
 * most a poll's records and the producer's 64 MB buffer); the client's log4j without appenders,
 * as veil logs only errors in the bench.
 */
const JVM_FLAGS = ['-Xms512m', '-Xmx512m', '-Dlog4j.configuration=file:/dev/null'];

/** What the bench's timing of a copy gives, for the JVM `pid` (its CPU and threads, not the bench's). */
export type Timed = (groupId: string, topic: string, pid: number) => Promise<{ rate: number; cpu: number; threads: string }>;

export interface JavaCost {
  rate: number;
  /** the JVM's CPU during the timed records, in cores */
  cpu: number;
  batches: number;
  threads: string;
  /** how the JVM was warmed up before the copy the bench times */
  warmup: string;
}

export interface JavaOptions {
  /** at most this many untimed copies of the records first, in the same JVM (default 5) */
  warmupRounds?: number;
  /** client settings over the tuned ones: consumer.K=V or producer.K=V */
  overrides?: string[];
}

/** Compiles ExactlyOnceCopy.java into a temporary directory; returns it. */
async function compile(): Promise<string> {
  // a bench given $KAFKA_BROKERS may run where test-env.sh never installed the jars
  if (!existsSync(join(kafkaLibsDir(), '.complete'))) execFileSync(join(root, 'scripts/test-env.sh'), ['install'], { stdio: 'inherit' });
  const classes = await mkdtemp(join(tmpdir(), 'veil-bench-java-'));
  await promisify(execFile)('javac', ['-d', classes, '-cp', kafkaLibs(), join(root, 'bench/java/ExactlyOnceCopy.java')]);
  return classes;
}

/**
 * The child's stdout as a reader of the next line matching a pattern (the lines passed over are
 * kept in `skipped`); fails with its stderr if it ends first.
 */
function lineReader(child: ChildProcessWithoutNullStreams, skipped: string[]): (pattern: RegExp) => Promise<RegExpExecArray> {
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + String(d)).slice(-4000)));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return async (pattern) => {
    for (;;) {
      const { value, done } = await lines.next();
      if (done) throw new Error(`the Java copy ended before printing ${pattern}: ${stderr}`);
      const match = pattern.exec(value as string);
      if (match) return match;
      skipped.push(value as string);
    }
  };
}

/**
 * Runs the Java copy of `source` to `sink` after the JIT's warm-up copies to `warmupSink`; `timed`
 * measures it as it measures veil (its first records untimed, then the next ones between two
 * counts of the group's committed offsets), reading the JVM's CPU.
 */
export async function javaCopy(brokers: string, source: string, warmupSink: string, sink: string, timed: Timed, options: JavaOptions = {}): Promise<JavaCost> {
  const classes = await compile();
  const groupId = `bench-java-${sink}`;
  const child = spawn('java', [
    ...JVM_FLAGS,
    '-cp',
    `${classes}:${kafkaLibs()}`,
    'ExactlyOnceCopy',
    brokers,
    source,
    warmupSink,
    sink,
    groupId,
    String(options.warmupRounds ?? 5),
    ...(options.overrides ?? []),
  ]);
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  const warmup: string[] = [];
  const next = lineReader(child, warmup);
  try {
    const ended = exited.then((code) => Promise.reject(new Error(`the Java copy exited (${code}) before it copied every record`)));
    ended.catch(() => undefined); // it exits when asked to, after the race
    const cost = await Promise.race([timed(groupId, source, child.pid!), ended]);
    const [, , transactions] = await next(/^done (\d+) (\d+)$/);
    child.stdin.end('\n');
    if ((await exited) !== 0) throw new Error('the Java copy failed after its timed run');
    return { ...cost, batches: Number(transactions), warmup: warmedUp(warmup) };
  } finally {
    child.kill();
    await rm(classes, { recursive: true, force: true });
  }
}

/** The warm-up rounds the JVM reported ("warm-up ROUND RECORDS TRANSACTIONS MS JIT_MS"), in words. */
function warmedUp(lines: string[]): string {
  const rounds = lines.map((l) => /^warm-up \d+ (\d+) (\d+) (\d+) (\d+)$/.exec(l)).filter((m) => m !== null);
  const each = rounds.map(([, records, , ms, jit]) => `${Number(records).toLocaleString('en-US')} in ${(Number(ms) / 1000).toFixed(1)} s, JIT ${jit} ms`);
  return `${rounds.length} untimed copies of the records in the same JVM first, each with its own clients and group, until a copy's JIT compiling took under 2% of its time (${each.join('; ')}); then new clients and a new group for the copy timed as veil's is`;
}
