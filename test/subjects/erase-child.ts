// A process that erases subjects one after the other and says so (test/integration/subjects/subjects-kill.test.ts
// kills it with SIGKILL in the middle). argv: data dir, topic, ids as JSON; the master key in VEIL_TEST_MASTER.
import { SecretKey } from '../../src/engine/index.ts';
import { openKafkaStore } from './kafka-helpers.ts';

const [dir, topic, idsJson] = process.argv.slice(2) as [string, string, string];
const master = SecretKey.fromBytes(Buffer.from(process.env.VEIL_TEST_MASTER!, 'hex'));
const store = await openKafkaStore(dir, master, topic);
process.stdout.write('ready\n');
for (const id of JSON.parse(idsJson) as string[]) {
  await store.erase(id, { by: 'child', reason: 'fault test' });
  process.stdout.write(`erased ${id}\n`);
}
await store.close();
process.stdout.write('done\n');
