import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { promisify } from 'node:util';

/**
 * Starts a real component with one of the project's scripts (`<script> start` prints NAME=value
 * lines), exports what it prints to the tests, and returns the teardown: `<script> stop` — unless
 * the component was already up before (a developer's, a bench's), which is then left running.
 */
export async function startWithScript(scriptFromRoot: string, ports: readonly number[]): Promise<() => Promise<void>> {
  const script = new URL(`../../${scriptFromRoot}`, import.meta.url).pathname;
  const alreadyUp = (await Promise.all(ports.map(portOpen))).every(Boolean);
  const { stdout } = await promisify(execFile)(script, ['start'], { maxBuffer: 1 << 20, timeout: 600_000 });
  for (const line of stdout.split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) process.env[m[1]!] = m[2]!;
  }
  return async () => {
    if (alreadyUp || process.env.VEIL_KEEP_TEST_ENV) return;
    await promisify(execFile)(script, ['stop']).catch(() => undefined);
  };
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
