import { describe, expect, it } from 'vitest';
import { compileConfigText } from '../../src/engine/index.ts';
import { lineDiff } from '../../src/portal/config-diff.ts';
import { draftLimitDetails } from '../../src/portal/draft-limits.ts';
import { SandboxKeys } from '../../src/portal/sandbox-keys.ts';
import { redactSecretHashes, restoreSecretHashes } from '../../src/portal/secret-redaction.ts';
import { EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';

const HASH_A = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
const HASH_B = 'scrypt$16384$8$1$CCCCCCCCCCCCCCCCCCCCCC$DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD';

describe('secret hash redaction', () => {
  it('hides every hash, in values and comments, and puts the stored ones back on save', () => {
    const text = `identity:\n  clients:\n    a: { secretHash: '${HASH_A}', roles: [x] }\n    b:\n      secretHash: ${HASH_B} # was ${HASH_A}\n`;
    const shown = redactSecretHashes(text);
    expect(shown).not.toContain('scrypt$');
    expect(shown.match(/hidden:[0-9a-f]{12}/g)).toHaveLength(3);
    expect(restoreSecretHashes(shown, text)).toBe(text);
    // an unknown fingerprint stays (validation refuses it); another base does not reveal this one
    expect(restoreSecretHashes('x: hidden:0123456789ab', text)).toBe('x: hidden:0123456789ab');
    expect(restoreSecretHashes(shown, 'nothing')).toBe(shown);
    // a different hash has a different fingerprint, so a diff shows the change
    expect(redactSecretHashes(HASH_A)).not.toBe(redactSecretHashes(HASH_B));
  });
});

describe('sandbox keys', () => {
  it('derive only the versions used, whatever version a reference pins', () => {
    const config = compileConfigText(EXAMPLE_CONFIG_TEXT.replace('pan-ff1: { type: ff1, version: 1 }', 'pan-ff1: { type: ff1, version: 60000 }')).config!;
    const keys = new SandboxKeys(new Uint8Array(32).fill(7));
    const started = performance.now();
    keys.cover(config);
    expect(keys.info('pan-ff1')).toMatchObject({ type: 'ff1', primary: 60000 });
    expect(keys.info('pan-ff1')!.versions).toHaveLength(1);
    expect(keys.key('pan-ff1', 60000)).toBeDefined();
    expect(keys.key('pan-ff1', 60001)).toBeUndefined();
    expect(keys.key('pan-ff1', 0)).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(100);
    expect(String(keys.key('pan-ff1', 1))).toBe('[SecretKey]');
  });
});

describe('draft limits and the diff', () => {
  it('reports a key version above the limit at its pointer, and a draft over the size limit', () => {
    expect(draftLimitDetails(EXAMPLE_CONFIG_TEXT)).toEqual([]);
    expect(draftLimitDetails(EXAMPLE_CONFIG_TEXT.replace('version: 1 }', 'version: 10001 }'))).toMatchObject([
      { code: 'DRAFT_LIMIT_EXCEEDED', pointer: '/keys/pan-ff1/version' },
    ]);
    expect(draftLimitDetails(`${EXAMPLE_CONFIG_TEXT}#${'x'.repeat(256 * 1024)}`)).toMatchObject([{ code: 'DRAFT_LIMIT_EXCEEDED', pointer: '' }]);
  });

  it('diffs two 20,000-line texts in bounded time, the unchanged head and tail kept', () => {
    const a = Array.from({ length: 20_000 }, (_, i) => `line ${i}`).join('\n');
    const b = Array.from({ length: 20_000 }, (_, i) => (i > 5 && i < 19_990 ? `other ${i}` : `line ${i}`)).join('\n');
    const started = performance.now();
    const diff = lineDiff(a, b);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(diff.slice(0, 6).every((l) => l.op === ' ')).toBe(true);
    expect(diff.filter((l) => l.op === '-')).toHaveLength(19_984);
    expect(diff.filter((l) => l.op === '+')).toHaveLength(19_984);
    expect(lineDiff('a\nb\nc', 'a\nx\nc')).toEqual([
      { op: ' ', text: 'a' },
      { op: '-', text: 'b' },
      { op: '+', text: 'x' },
      { op: ' ', text: 'c' },
    ]);
  });
});
