import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rulesFiredAt } from '../helpers/eslint-rules.ts';

const cwd = new URL('../..', import.meta.url).pathname;
const RULE = 'veil/kafka-home';

/** every .ts file under a folder of the project, relative to it */
function sources(dir: string): string[] {
  return readdirSync(join(cwd, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(cwd, join(e.parentPath, e.name)));
}

describe("Kafka's one home, src/kafka (veil/kafka-home)", () => {
  it('in all of src, only src/kafka imports kafkajs or the librdkafka binding, each only by its adapter files (the files as they are)', () => {
    const importers = sources('src').filter((f) =>
      /from '(kafkajs|@confluentinc\/kafka-javascript)'|import\('(kafkajs|@confluentinc\/kafka-javascript)'\)/.test(readFileSync(join(cwd, f), 'utf8')),
    );
    expect(importers.length).toBeGreaterThan(5);
    for (const f of importers) expect(f, f).toMatch(/^src\/kafka\/(kafkajs|librdkafka)-[a-z0-9-]+\.ts$/);
  });

  it.each([
    ['src/control/probe.ts', "import { Kafka } from 'kafkajs';\nexport const x = Kafka;\n"],
    ['src/subjects/probe.ts', "import type { Admin } from 'kafkajs';\nexport type X = Admin;\n"],
    ['src/app/open-probe.ts', "import { Kafka } from 'kafkajs';\nexport const x = Kafka;\n"],
    ['src/stream/protect/probe.ts', "import type { LibrdKafkaError } from '@confluentinc/kafka-javascript';\nexport type X = LibrdKafkaError;\n"],
    ['src/kafka/open-port.ts', "import type { Admin } from 'kafkajs';\nexport type X = Admin;\n"],
    ['src/kafka/librdkafka-probe.ts', "import { Kafka } from 'kafkajs';\nexport const x = Kafka;\n"],
    ['src/kafka/kafkajs-probe.ts', "import rdkafka from '@confluentinc/kafka-javascript';\nexport const x = rdkafka;\n"],
  ])('rejects in %s an import of a client library', async (file, code) => {
    expect(await rulesFiredAt(file, code)).toContain(RULE);
  });

  it.each([
    ['src/cli/probe.ts', "export const m = import('../kafka/librdkafka-adapter.ts');\n"],
    ['src/control/probe.ts', "import { KafkaControlLog } from '../kafka/kafkajs-compacted-topic.ts';\nexport const x = KafkaControlLog;\n"],
    ['bench/probe.ts', "import { kafkajsPort } from '../src/kafka/kafkajs-adapter.ts';\nexport const x = kafkajsPort;\n"],
  ])('rejects in %s an import past the front door', async (file, code) => {
    expect(await rulesFiredAt(file, code)).toContain(RULE);
  });

  it('allows the adapters their own library, anyone the front door, and tests the internals they test', async () => {
    expect(await rulesFiredAt('src/kafka/kafkajs-probe.ts', "import type { Admin } from 'kafkajs';\nexport type X = Admin;\n")).toEqual([]);
    expect(
      await rulesFiredAt(
        'src/kafka/librdkafka-probe.ts',
        "import type { LibrdKafkaError } from '@confluentinc/kafka-javascript';\nexport type X = LibrdKafkaError;\n",
      ),
    ).toEqual([]);
    expect(await rulesFiredAt('src/control/probe.ts', "import { kafkaConnection } from '../kafka/index.ts';\nexport const x = kafkaConnection;\n")).toEqual([]);
    expect(
      await rulesFiredAt('test/kafka/probe.test.ts', "import { kafkajsPort } from '../../src/kafka/kafkajs-adapter.ts';\nexport const x = kafkajsPort;\n"),
    ).toEqual([]);
    expect(await rulesFiredAt('test/integration/probe.test.ts', "import { Kafka } from 'kafkajs';\nexport const x = Kafka;\n")).toEqual([]);
  });
});
