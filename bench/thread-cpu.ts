// Per-thread CPU of this process (Linux /proc/self/task), grouped by what the threads do, so
// bench:stream can say where each record's CPU goes. Elsewhere (no /proc) it reports nothing.
import { readdirSync, readFileSync } from 'node:fs';

/** CPU milliseconds per thread id, with the thread's name. */
export type ThreadCpu = Map<string, { name: string; ms: number }>;

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
  return out;
}

/**
 * µs of CPU per record between two snapshots, by group: the main (consumer) thread, the other
 * Node threads (protection workers and V8's GC and compiler helpers), librdkafka's threads and
 * libuv's thread pool.
 */
export function perRecord(before: ThreadCpu, after: ThreadCpu, records: number): string {
  const groups = new Map<string, number>();
  for (const [tid, t] of after) {
    const group = tid === String(process.pid) ? 'main thread' : t.name.startsWith('rdk:') ? 'librdkafka' : t.name.startsWith('libuv') ? 'libuv pool' : t.name === 'node' ? 'other Node threads' : 'other';
    groups.set(group, (groups.get(group) ?? 0) + t.ms - (before.get(tid)?.ms ?? 0));
  }
  if (groups.size === 0) return 'per-thread CPU not available';
  const us = (ms: number) => ((ms * 1000) / records).toFixed(1);
  const total = [...groups.values()].reduce((a, b) => a + b, 0);
  const parts = ['main thread', 'other Node threads', 'librdkafka', 'libuv pool', 'other'].filter((g) => (groups.get(g) ?? 0) > 0).map((g) => `${g} ${us(groups.get(g)!)}`);
  return `${us(total)} µs CPU per record (${parts.join(', ')})`;
}
