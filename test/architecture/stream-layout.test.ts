import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectEslint, rulesFiredAt } from '../helpers/eslint-rules.ts';

const cwd = new URL('../..', import.meta.url).pathname;
const eslint = projectEslint();

const RULE = 'veil/stream-front-doors';
const FOLDERS = ['config', 'protect', 'registry', 'serde', 'unprotect'];

describe("src/stream's folders and their front doors (veil/stream-front-doors)", () => {
  it('src/stream holds the known folders, each with an index.ts, and only its shared files at the root (the files as they are)', () => {
    const entries = readdirSync(join(cwd, 'src/stream'), { withFileTypes: true });
    expect(
      entries
        .filter((e) => e.isDirectory())
        .map((e) => e.name)
        .sort(),
    ).toEqual(FOLDERS);
    for (const folder of FOLDERS) expect(readdirSync(join(cwd, 'src/stream', folder)), folder).toContain('index.ts');
    expect(
      entries
        .filter((e) => e.isFile())
        .map((e) => e.name)
        .sort(),
    ).toEqual(['log.ts', 'memo.ts', 'stream-error.ts']);
  });

  it.each([
    ['src/app/open-probe.ts', "import { ProtectPipeline } from '../stream/protect/pipeline.ts';\nexport const x = ProtectPipeline;\n"],
    ['src/app/open-probe.ts', "export { UnprotectClient } from '../stream/unprotect/client.ts';\n"],
    ['src/stream/protect/probe.ts', "import { jsonSerde } from '../serde/json/json-serde.ts';\nexport const x = jsonSerde;\n"],
    ['src/stream/unprotect/probe.ts', "import type { PipelineConfig } from '../config/pipeline-config.ts';\nexport type X = PipelineConfig;\n"],
    ['src/stream/serde/probe.ts', "import type { SchemaRegistryPort } from '../registry/registry-port.ts';\nexport type X = SchemaRegistryPort;\n"],
    ['bench/probe.ts', "import { ProtectPipeline } from '../src/stream/protect/pipeline.ts';\nexport const x = ProtectPipeline;\n"],
    ['test/integration/probe.test.ts', "import { pipelineSchema } from '../../src/stream/config/pipeline-config.ts';\nexport const x = pipelineSchema;\n"],
  ])('rejects in %s an import of a folder internal', async (file, code) => {
    expect(await rulesFiredAt(file, code)).toContain(RULE);
  });

  it('rejects outside src/stream an import of a file shared only inside it; its error type is public', async () => {
    expect(await rulesFiredAt('src/app/open-probe.ts', "import { memo } from '../stream/memo.ts';\nexport const x = memo;\n")).toContain(RULE);
    expect(await rulesFiredAt('src/app/open-probe.ts', "import { StreamError } from '../stream/stream-error.ts';\nexport const x = StreamError;\n")).toEqual(
      [],
    );
    expect(await rulesFiredAt('src/app/open-probe.ts', "import { x } from '../stream/errors.ts';\nexport const y = x;\n")).toContain(RULE);
  });

  it('allows the front doors, from anywhere, a folder its own files, and unit tests under test/stream the internals they test', async () => {
    expect(
      await rulesFiredAt(
        'src/app/open-probe.ts',
        "import { ProtectPipeline } from '../stream/protect/index.ts';\nimport { openKafkaPort } from '../kafka/index.ts';\nexport const x = [ProtectPipeline, openKafkaPort];\n",
      ),
    ).toEqual([]);
    expect(
      await rulesFiredAt(
        'src/stream/protect/probe.ts',
        "import { jsonSerde } from '../serde/index.ts';\nimport { Liveness } from './liveness.ts';\nimport { memo } from '../memo.ts';\nexport const x = [jsonSerde, Liveness, memo];\n",
      ),
    ).toEqual([]);
    expect(
      await rulesFiredAt(
        'test/stream/protect/probe.test.ts',
        "import { Liveness } from '../../../src/stream/protect/liveness.ts';\nexport const x = Liveness;\n",
      ),
    ).toEqual([]);
  });

  it('rejects a folder of src/stream it does not know and a new file at its root', async () => {
    expect(await rulesFiredAt('src/stream/helpers/probe.ts', 'export const x = 1;\n')).toContain(RULE);
    expect(await rulesFiredAt('src/stream/protect-probe.ts', 'export const x = 1;\n')).toContain(RULE);
  });
});

describe('every folder of src is in a layer (veil/adapter-isolation)', () => {
  it('rejects a folder of src in no layer', async () => {
    expect(await rulesFiredAt('src/newfolder/probe.ts', 'export const x = 1;\n')).toContain('veil/adapter-isolation');
  });

  it('src/discover is neutral: it imports no adapter (the files as they are), and an import of one is rejected', async () => {
    const results = await eslint.lintFiles(['src/discover']);
    expect(results.length).toBeGreaterThan(1);
    expect(results.flatMap((r) => r.messages.map((m) => `${r.filePath}: ${m.ruleId}`))).toEqual([]);
    expect(
      await rulesFiredAt('src/discover/probe.ts', "import type { PipelineConfig } from '../stream/config/index.ts';\nexport type X = PipelineConfig;\n"),
    ).toContain('veil/adapter-isolation');
  });
});
