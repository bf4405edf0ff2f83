// Per-thread CPU of this process (Linux /proc/self/task), grouped by what the threads do, so
// bench:stream can say where each record's CPU goes. Elsewhere (no /proc) it reports nothing.
import { readdirSync, readFileSync } from 'node:fs';

/** CPU milliseconds per thread id, with the thread's name; and the local broker's under BROKER. */
export type ThreadCpu = Map<string, { name: string; ms: number }>;

const BROKER = 'broker';

const TICK_MS = 10; // USER_HZ = 100 on Linux

export function threadCpu(): ThreadCpu {
  const out: ThreadCpu = new Map();
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
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
      if (!readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').includes('kafka.Kafka')) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
    } catch {
      // the process ended meanwhile
    }
  }
  return undefined;
}

/**
 * µs of CPU per record between two snapshots, by group: the main (consumer) thread, the other
 * Node threads (protection workers and V8's GC and compiler helpers), librdkafka's threads and
 * libuv's thread pool.
 */
export function perRecord(before: ThreadCpu, after: ThreadCpu, records: number): string {
  const groups = new Map<string, number>();
  for (const [tid, t] of after) {
    if (tid === BROKER) continue;
    const group = tid === String(process.pid) ? 'main thread' : t.name.startsWith('rdk:') ? 'librdkafka' : t.name.startsWith('libuv') ? 'libuv pool' : t.name === 'node' ? 'other Node threads' : 'other';
    groups.set(group, (groups.get(group) ?? 0) + t.ms - (before.get(tid)?.ms ?? 0));
  }
  if (groups.size === 0) return 'per-thread CPU not available';
  const us = (ms: number) => ((ms * 1000) / records).toFixed(1);
  const total = [...groups.values()].reduce((a, b) => a + b, 0);
  const parts = ['main thread', 'other Node threads', 'librdkafka', 'libuv pool', 'other'].filter((g) => (groups.get(g) ?? 0) > 0).map((g) => `${g} ${us(groups.get(g)!)}`);
  const broker = after.get(BROKER) && before.get(BROKER) ? `; the broker ${us(after.get(BROKER)!.ms - before.get(BROKER)!.ms)}` : '';
  return `${us(total)} µs CPU per record (${parts.join(', ')})${broker}`;
}
