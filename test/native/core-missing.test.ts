import { describe, expect, it, vi } from 'vitest';
import { EXAMPLE_CONFIG } from '../../src/env/index.ts';
import { loadNativeCore } from '../../src/native/core.ts';
import { NativeFault } from '../../src/native/index.ts';
import { FIXED_NOW, masterKeyHex, tempDir } from '../helpers/cli-io.ts';

// openEngine's wiring asks the native core for its primitives: here the core is not there
vi.mock('../../src/native/primitives.ts', () => ({
  nativePrimitives: () => loadNativeCore('/nonexistent/veil-native.node'),
}));
const { openEngine } = await import('../../src/app/open-engine.ts');

describe('a native core that does not load (issue 42: no silent slow path)', () => {
  it('is NATIVE_CORE_MISSING, naming the file and the build command', () => {
    let fault: unknown;
    try {
      loadNativeCore('/nonexistent/veil-native.node');
    } catch (e) {
      fault = e;
    }
    expect(fault).toBeInstanceOf(NativeFault);
    expect((fault as NativeFault).code).toBe('NATIVE_CORE_MISSING');
    expect((fault as NativeFault).retriable).toBe(false);
    expect((fault as Error).message).toMatch(/\/nonexistent\/veil-native\.node.*sh scripts\/build-native\.sh/);
  });

  it('stops veil at start: openEngine (serve, the gateway, the stream workers, the CLI) refuses to open an engine', async () => {
    const dataDir = await tempDir();
    const opening = openEngine({ configFile: EXAMPLE_CONFIG, dataDir, env: { VEIL_MASTER_KEY: masterKeyHex() }, now: () => FIXED_NOW, provision: true });
    await expect(opening).rejects.toMatchObject({ code: 'NATIVE_CORE_MISSING' });
  });
});
