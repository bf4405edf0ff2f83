import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventually, freePorts, ROOT } from '../../helpers/processes.ts';

/** The processes below `pid` (children, their children, …), from /proc: pid and command line. */
function descendants(pid: number): { pid: number; command: string }[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // the parent pid is the 2nd field after the command, which is in parentheses and may hold spaces
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      /* gone meanwhile */
    }
  }
  const out: { pid: number; command: string }[] = [];
  const walk = (p: number) => {
    for (const child of parents.get(p) ?? []) {
      let command = '';
      try {
        command = readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0').join(' ');
      } catch {
        /* gone meanwhile */
      }
      out.push({ pid: child, command });
      walk(child);
    }
  };
  walk(pid);
  return out;
}

/** whether `pid` still runs (a zombie, exited and not yet reaped, does not) */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/**
 * `npm start` as the README runs it: npm runs the script with `sh -c`, and a signal sent to npm is
 * forwarded to that shell only. The script execs scripts/node22, which execs node, so veil serve
 * is npm's own child and gets the signal: it drains and exits, and nothing is left running.
 */
describe('npm start: a stop signal sent to npm reaches veil serve (real processes)', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal}: veil serve drains and no process npm started remains`, async () => {
      const dataDir = await mkdtemp(join(tmpdir(), 'veil-npm-start-'));
      const port = await freePorts(1);
      const npm = spawn('npm', ['start'], {
        cwd: ROOT,
        // its own process group, so that whatever is left can be killed at the end
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...process.env,
          VEIL_PORT: String(port),
          VEIL_DATA_DIR: dataDir,
          VEIL_LOG_LEVEL: 'info',
          VEIL_DRAIN_DELAY_MS: '0',
          npm_config_update_notifier: 'false',
        },
      });
      let output = '';
      npm.stdout.on('data', (d) => (output += String(d)));
      npm.stderr.on('data', (d) => (output += String(d)));
      let tree: { pid: number; command: string }[] = [];
      try {
        await eventually('veil serve ready under npm start', async () => ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok ? true : undefined), 60_000);
        tree = [{ pid: npm.pid!, command: 'npm start' }, ...descendants(npm.pid!)];
        const veil = tree.find((p) => p.command.includes('src/cli/main.ts serve'));
        expect(veil, JSON.stringify(tree)).toBeDefined();
        const sent = Date.now();
        process.kill(npm.pid!, signal);
        await eventually('every process npm start ran to exit', async () => (tree.every((p) => !running(p.pid)) ? true : undefined), 15_000).catch(
          (e: Error) => {
            throw new Error(`${e.message}; still running: ${JSON.stringify(tree.filter((p) => running(p.pid)))}; output: ${output}`);
          },
        );
        // it drained (the signal reached it), rather than being killed
        expect(output).toContain('"msg":"draining"');
        expect(Date.now() - sent).toBeLessThan(15_000);
      } finally {
        const left = tree.filter((p) => running(p.pid));
        if (left.length || running(npm.pid!)) {
          try {
            process.kill(-npm.pid!, 'SIGKILL');
          } catch {
            /* the group is gone */
          }
          for (const p of left) {
            try {
              process.kill(p.pid, 'SIGKILL');
            } catch {
              /* gone */
            }
          }
        }
        await rm(dataDir, { recursive: true, force: true });
      }
    }, 90_000);
  }
});
