// Per-thread CPU of this process or a child (Linux /proc/<pid>/task), grouped by what the threads
// do, so bench:stream can say where each record's CPU goes — veil's and its Java baseline's.
// Elsewhere (no /proc) it reports nothing.
import { readdirSync, readFileSync } from 'node:fs';

/** CPU milliseconds per thread id, with the thread's name; and the local broker's under BROKER. */
export type ThreadCpu = Map<string, { name: string; ms: number }>;

const BROKER = 'broker';

const TICK_MS = 10; // USER_HZ = 100 on Linux

/** Per-thread CPU of this process, or of the process `pid` (the Java baseline's JVM). */
export function threadCpu(pid: number | 'self' = 'self'): ThreadCpu {
  const out: ThreadCpu = new Map();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(tid, { name, ms: (Number(fields[11]) + Number(fields[12])) * TICK_MS });
    } catch {
      // the thread ended meanwhile
    }
  }
  const broker = brokerCpu();
  if (broker !== undefined) out.set(BROKER, { name: 'kafka.Kafka', ms: broker });
  return out;
}

/** CPU milliseconds of the process `pid` (every thread it ran, ended ones too); undefined when it is gone. */
export function processCpu(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return undefined;
  }
}

/**
 * CPU milliseconds of the Kafka broker when it runs on this machine (a JVM running kafka.Kafka,
 * as scripts/test-env.sh starts it): the broker shares the cores, so its cost per record is part
 * of what a pipeline's rate is. Undefined when no such process is found.
 */
function brokerCpu(): number | undefined {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').includes('kafka.Kafka')) return processCpu(Number(pid));
    } catch {
      // the process ended meanwhile
    }
  }
  return undefined;
}

/** How a process's threads are grouped: the groups in print order, and a thread's group. */
export interface ThreadGroups {
  order: string[];
  of(tid: string, name: string): string;
}

/**
 * A Node process's threads: the main (consumer) thread, the other Node threads (protection
 * workers and V8's GC and compiler helpers), librdkafka's threads and libuv's thread pool.
 */
export const NODE_THREADS: ThreadGroups = {
  order: ['main thread', 'other Node threads', 'librdkafka', 'libuv pool', 'other'],
  of: (tid, name) =>
    tid === String(process.pid)
      ? 'main thread'
      : name.startsWith('rdk:')
        ? 'librdkafka'
        : name.startsWith('libuv')
          ? 'libuv pool'
          : name === 'node'
            ? 'other Node threads'
            : 'other',
};

/**
 * A JVM's threads (HotSpot names them; Linux keeps 15 characters): the thread running main (the
 * launcher names it "java"), the Kafka client's network and heartbeat threads, the JIT compilers
 * and the garbage collector — so the Java baseline's warm-up shows as compiler CPU.
 */
export const JVM_THREADS: ThreadGroups = {
  order: ['main thread', 'Kafka client threads', 'JIT compilers', 'GC', 'other JVM threads'],
  of: (_tid, name) =>
    name === 'java'
      ? 'main thread'
      : name.startsWith('kafka-')
        ? 'Kafka client threads'
        : / CompilerThre/.test(name)
          ? 'JIT compilers'
          : /^(GC |G1 )/.test(name)
            ? 'GC'
            : 'other JVM threads',
};

/** µs of CPU per record between two snapshots, by thread group, and the local broker's. */
export function perRecord(before: ThreadCpu, after: ThreadCpu, records: number, threads: ThreadGroups = NODE_THREADS): string {
  const groups = new Map<string, number>();
  for (const [tid, t] of after) {
    if (tid === BROKER) continue;
    const group = threads.of(tid, t.name);
    groups.set(group, (groups.get(group) ?? 0) + t.ms - (before.get(tid)?.ms ?? 0));
  }
  if (groups.size === 0) return 'per-thread CPU not available';
  const us = (ms: number) => ((ms * 1000) / records).toFixed(1);
  const total = [...groups.values()].reduce((a, b) => a + b, 0);
  const parts = threads.order.filter((g) => (groups.get(g) ?? 0) > 0).map((g) => `${g} ${us(groups.get(g)!)}`);
  const broker = after.get(BROKER) && before.get(BROKER) ? `; the broker ${us(after.get(BROKER)!.ms - before.get(BROKER)!.ms)}` : '';
  return `${us(total)} µs CPU per record (${parts.join(', ')})${broker}`;
}
