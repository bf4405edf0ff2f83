import { execFile } from 'node:child_process';
import { homedir } from 'node:os';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const NATIVE = new URL('../../native/', import.meta.url).pathname;

/**
 * The crate's own tests (`cargo test` in native/), run by npm test so CI runs them: the RFC 5297
 * and NIST samples on the Rust side, and the differentials against second implementations that
 * only exist in Rust — the batched SIV against the `aes-siv` crate, FF1 against the `fpe` crate.
 */
it('native/: cargo test passes, and the core agrees with the aes-siv and fpe crates', async () => {
  const { stdout } = await promisify(execFile)(
    'cargo',
    ['test', '--release', '--locked', '--manifest-path', `${NATIVE}Cargo.toml`, '--target-dir', `${NATIVE}target`, '--', '--nocapture'],
    { env: { ...process.env, PATH: `${process.env.PATH}:${homedir()}/.cargo/bin` }, timeout: 600_000, maxBuffer: 16 << 20 },
  );
  const [, passed, failed] = /test result: ok\. (\d+) passed; (\d+) failed/.exec(stdout) ?? [];
  expect(Number(failed)).toBe(0);
  expect(Number(passed)).toBeGreaterThanOrEqual(8);
  expect(stdout).toMatch(/AES-SIV against the aes-siv crate: \d+ values in 2000 batches, 0 mismatches, 0 tampered values opened/);
  expect(stdout).toMatch(/FF1 against the fpe crate: 20000 cases \(\d+ on the general path\), 0 mismatches/);
}, 600_000);
