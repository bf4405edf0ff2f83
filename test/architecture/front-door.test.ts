import { describe, expect, it } from 'vitest';
import { rulesFiredAt } from '../helpers/eslint-rules.ts';

describe('the engine front door (veil/engine-front-door)', () => {
  it.each([
    ['src/app/open-probe.ts', "import { Engine } from '../engine/engine.ts';\nexport const x = Engine;\n"],
    ['src/http/routes/probe.ts', "import type { ServiceConfig } from '../../engine/config/schema.ts';\nexport type X = ServiceConfig;\n"],
    ['src/stream/probe.ts', "export { VeilError } from '../engine/errors.ts';\n"],
    ['src/cli/probe.ts', "export * from '../engine/request/schema.ts';\n"],
    ['src/audit/probe.ts', "export const m = import('../engine/contexts.ts');\n"],
    ['test/http/probe.ts', "import { ENGINE_ERRORS } from '../../src/engine/errors.ts';\nexport const x = ENGINE_ERRORS;\n"],
    ['test/golden/probe.ts', "import { aesSiv } from '../../src/engine/transformers/aes-siv.ts';\nexport const x = aesSiv;\n"],
    ['bench/probe.ts', "import { AesBlock } from '../src/engine/crypto/aes-block.ts';\nexport const x = AesBlock;\n"],
    ['tools/probe.ts', "import { jsonSchemas } from '../src/engine/schemas.ts';\nexport const x = jsonSchemas;\n"],
  ])('rejects in %s an import of an engine internal', async (file, code) => {
    expect(await rulesFiredAt(file, code)).toContain('veil/engine-front-door');
  });

  it('allows the front door itself, from anywhere', async () => {
    expect(
      await rulesFiredAt('src/app/open-probe.ts', "import { Engine, VeilError } from '../engine/index.ts';\nexport const x = [Engine, VeilError];\n"),
    ).toEqual([]);
    expect(await rulesFiredAt('test/http/probe.ts', "import { ENGINE_ERRORS } from '../../src/engine/index.ts';\nexport const x = ENGINE_ERRORS;\n")).toEqual(
      [],
    );
    expect(await rulesFiredAt('bench/probe.ts', "import { createTransformer } from '../src/engine/index.ts';\nexport const x = createTransformer;\n")).toEqual(
      [],
    );
  });

  it('allows test/engine to reach the internals it tests, and the engine its own files', async () => {
    expect(await rulesFiredAt('test/engine/crypto/probe.ts', "import { Ff1 } from '../../../src/engine/crypto/ff1.ts';\nexport const x = Ff1;\n")).toEqual([]);
    expect(await rulesFiredAt('src/engine/probe.ts', "import { Engine } from './engine.ts';\nexport const x = Engine;\n")).toEqual([]);
  });

  it('the front door does not open key bytes to everyone: revealKeyBytes from it is still restricted', async () => {
    const code = "import { revealKeyBytes } from '../engine/index.ts';\nexport const x = revealKeyBytes;\n";
    expect(await rulesFiredAt('src/app/open-probe.ts', code)).toContain('no-restricted-imports');
    expect(await rulesFiredAt('src/keystore/probe.ts', code)).toEqual([]);
  });
});
