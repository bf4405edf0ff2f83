import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { ROOT } from './processes.ts';

/** test/helpers/gateway-upstream.ts as its own process; it prints its port as its first line. */
export async function spawnGatewayUpstream(options: { lenient?: boolean } = {}): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(join(ROOT, 'scripts/node22'), [join(ROOT, 'test/helpers/gateway-upstream.ts')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, UPSTREAM_LENIENT: options.lenient ? '1' : '0' },
  });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  return { child, url: `http://127.0.0.1:${JSON.parse(String(line)).port}` };
}
