// What one veil process holds while its pipeline runs, for bench:stream's partition scaling (issue
// 42): librdkafka clients and threads (Linux /proc/self/task: librdkafka names each client's main
// thread rdk:main), and TCP connections from this process to the brokers (/proc/self/fd sockets
// matched against /proc/self/net/tcp and tcp6). Elsewhere (no /proc) every count is 0.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export interface Footprint {
  /** librdkafka client instances (consumers and producers): their rdk:main threads */
  clients: number;
  /** threads of this process, every kind */
  threads: number;
  /** established TCP connections of this process to one of the broker ports */
  connections: number;
}

function threadNames(): string[] {
  try {
    return readdirSync('/proc/self/task').flatMap((tid) => {
      try {
        return [readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim()];
      } catch {
        return []; // the thread ended meanwhile
      }
    });
  } catch {
    return [];
  }
}

/** Inodes of this process's sockets. */
function socketInodes(): Set<string> {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync('/proc/self/fd')) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
        if (m) inodes.add(m[1]!);
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    // no /proc
  }
  return inodes;
}

/** Established connections of this process whose remote port is one of `ports`. */
function connectionsTo(ports: ReadonlySet<number>): number {
  const mine = socketInodes();
  let count = 0;
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    let lines: string[];
    try {
      lines = readFileSync(table, 'utf8').trim().split('\n').slice(1);
    } catch {
      continue;
    }
    for (const line of lines) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      const f = line.trim().split(/\s+/);
      const remotePort = parseInt(f[2]!.split(':')[1]!, 16);
      const established = f[3] === '01';
      if (established && ports.has(remotePort) && mine.has(f[9]!)) count++;
    }
  }
  return count;
}

/** This process's librdkafka clients, threads and broker connections now. */
export function footprint(brokers: string): Footprint {
  const ports = new Set(brokers.split(',').map((b) => Number(b.slice(b.lastIndexOf(':') + 1))));
  const names = threadNames();
  return { clients: names.filter((n) => n === 'rdk:main').length, threads: names.length, connections: connectionsTo(ports) };
}
