import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { KafkaControlLog } from '../../../src/control/kafka-control-log.ts';
import { BROKERS } from '../../helpers/kafka.ts';
import { ROOT } from '../../helpers/processes.ts';
import { plainConnection } from '../../../src/kafka/index.ts';

const exec = promisify(execFile);

/** `veil store migrate`: a local data dir into an empty Kafka control store, read back and verified; then a data dir mirrored from it alone. */
describe('veil store migrate', () => {
  const dirs: string[] = [];
  afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  it('copies every version and the key set, verifies them, refuses a second migration, and a new data dir catches up from the topic alone', async () => {
    const local = await mkdtemp(join(tmpdir(), 'veil-migrate-'));
    const fresh = await mkdtemp(join(tmpdir(), 'veil-migrated-'));
    dirs.push(local, fresh);
    const env = { ...process.env, VEIL_MASTER_KEY: 'd'.repeat(64) };
    const veil = (args: string[], extra: Record<string, string> = {}) => exec(join(ROOT, 'bin/veil'), args, { env: { ...env, ...extra } });
    const example = join(ROOT, 'config/example.yaml');
    await veil(['config', 'provision', example, '--data-dir', local]);
    await veil(['config', 'publish', example, '--data-dir', local, '--note', 'first']);
    const second = join(local, 'second.yaml');
    await writeFile(second, (await readFile(example, 'utf8')).replace('Customer:', '# second version\n  Customer:'));
    await veil(['config', 'publish', second, '--data-dir', local, '--note', 'second']);

    const topic = `veil.control.migrate.${randomBytes(4).toString('hex')}`;
    const store = { VEIL_CONTROL_STORE: 'kafka', VEIL_CONTROL_TOPIC: topic, KAFKA_BROKERS: BROKERS.join(',') };
    const { stdout } = await veil(['store', 'migrate', '--data-dir', local], store);
    expect(stdout).toMatch(/2 configuration version\(s\), the key set; read back and verified/);
    const again = await veil(['store', 'migrate', '--data-dir', local], store).catch((e: { code: number; stderr: string }) => e);
    expect(again).toMatchObject({ code: 1 });
    expect((again as { stderr: string }).stderr).toMatch(/holds versions already/);

    const log = await KafkaControlLog.open({ connection: plainConnection(BROKERS), topic });
    expect(log.state.configs.map((c) => [c.number, c.write.meta?.note])).toEqual([
      [1, 'first'],
      [2, 'second'],
    ]);
    expect(Buffer.from(log.state.keyset!.write.body, 'base64').equals(await readFile(join(local, 'keystore.json')))).toBe(true);
    await log.close();

    // a process on an empty data dir: the keys list comes from the topic alone
    const listed = JSON.parse((await veil(['keys', 'list', '--json', '--data-dir', fresh], store)).stdout) as { keys: { id: string }[] };
    const original = JSON.parse((await veil(['keys', 'list', '--json', '--data-dir', local])).stdout) as { keys: { id: string }[] };
    expect(listed.keys.map((k) => k.id).sort()).toEqual(original.keys.map((k) => k.id).sort());
    expect(await readFile(join(fresh, 'config-versions/0002.yaml'), 'utf8')).toBe(await readFile(second, 'utf8'));
  }, 120_000);
});
