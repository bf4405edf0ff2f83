import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { compileVeilConfigText } from '../../../src/app/config-file.ts';
import { SecretKey } from '../../../src/engine/index.ts';
import { LocalKeystore } from '../../../src/keystore/local-keystore.ts';
import { KafkaControlLog } from '../../../src/control/kafka-control-log.ts';
import { BROKERS } from '../../helpers/kafka.ts';
import { ROOT } from '../../helpers/processes.ts';
import { plainConnection } from '../../../src/kafka/index.ts';

const exec = promisify(execFile);
const MASTER = 'a1'.repeat(32);

/**
 * Processes killed (SIGKILL) at random moments while they publish or rotate: the topic never
 * holds a fork or a half-written key set — every accepted key set opens, numbers follow each other
 * — and a process on an empty data dir catches up from the topic alone to the same keys.
 */
describe('the control store under SIGKILL', () => {
  const dirs: string[] = [];
  afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  it('publishes and rotations killed mid-way leave one linear history that a new process reads whole', async () => {
    const topic = `veil.control.kill.${randomBytes(4).toString('hex')}`;
    const env = { ...process.env, VEIL_MASTER_KEY: MASTER, VEIL_CONTROL_STORE: 'kafka', VEIL_CONTROL_TOPIC: topic, KAFKA_BROKERS: BROKERS.join(',') };
    const dir = await mkdtemp(join(tmpdir(), 'veil-kill-'));
    dirs.push(dir);
    const example = join(ROOT, 'config/example.yaml');
    await exec(join(ROOT, 'bin/veil'), ['config', 'provision', example, '--data-dir', dir], { env });
    let seed = 5;
    const rand = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    let killed = 0;
    for (let i = 0; i < 6; i++) {
      const args = i % 2 === 0 ? ['keys', 'rotate', '--id', 'customer-gcm'] : ['config', 'publish', example, '--note', `try ${i}`];
      // each its own data dir, as a process on another host
      const own = await mkdtemp(join(tmpdir(), 'veil-kill-p-'));
      dirs.push(own);
      const child = spawn(join(ROOT, 'bin/veil'), [...args, '--data-dir', own], { env, stdio: 'ignore' });
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      const timer = setTimeout(() => child.kill('SIGKILL'), 500 + rand() * 4_000);
      const code = await exited;
      clearTimeout(timer);
      if (code === null) killed++;
    }
    expect(killed).toBeGreaterThan(0);

    const log = await KafkaControlLog.open({ connection: plainConnection(BROKERS), topic });
    await log.close();
    expect(log.state.configs.map((c) => c.number)).toEqual(log.state.configs.map((_, i) => i + 1));
    for (const c of log.state.configs) expect(compileVeilConfigText(c.write.body).issues.filter((x) => x.severity === 'error')).toEqual([]);
    // every accepted key set opens, and versions only grow
    const master = SecretKey.fromBytes(Buffer.from(MASTER, 'hex'));
    const fresh = await mkdtemp(join(tmpdir(), 'veil-kill-fresh-'));
    dirs.push(fresh);
    await LocalKeystore.mirror(fresh, Buffer.from(log.state.keyset!.write.body, 'base64'));
    const last = await LocalKeystore.open({ dataDir: fresh, masterKey: master });
    const primary = last.info('customer-gcm')!.primary;
    // provision made 4 keys, one key set each; the first publish that got so far made the control key
    const controlKey = last.info('veil-control') ? 1 : 0;
    expect(primary).toBe(log.state.head('keyset') - 3 - controlKey);
    // every configuration version that was accepted was signed with that key
    for (const c of log.state.configs) expect(c.write.auth?.key).toBe(1);
    // a process on an empty data dir catches up from the topic alone
    const catchUp = await mkdtemp(join(tmpdir(), 'veil-kill-catchup-'));
    dirs.push(catchUp);
    const listed = JSON.parse((await exec(join(ROOT, 'bin/veil'), ['keys', 'list', '--json', '--data-dir', catchUp], { env })).stdout) as {
      keys: { id: string; primary: number }[];
    };
    expect(listed.keys.find((k) => k.id === 'customer-gcm')?.primary).toBe(primary);
    console.log(
      `control store under SIGKILL: ${killed} of 6 processes killed, ${log.state.configs.length + log.state.head('keyset') - 4 - controlKey} of their writes accepted; ${log.state.configs.length} configuration and ${log.state.head('keyset')} key-set versions, linear`,
    );
  }, 180_000);
});
