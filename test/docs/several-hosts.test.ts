import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './markdown.ts';

/**
 * docs/operations.md's "Settings every host shares" names every environment setting the three
 * things hosts must agree on are read from: the KEK (src/keystore/kms/kms-from-env.ts,
 * src/keystore/master-key.ts), the control store (src/control/control-store.ts), the subject-key
 * store (src/subjects/open-subject-store.ts) and the token
 * issuer (VEIL_BASE_URL, read by every process that verifies tokens). A setting added to one of
 * those files and not to the table fails here.
 */
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const SETTING = /\b(?:VEIL_[A-Z0-9_]+|KAFKA_BROKERS|AWS_REGION)\b/g;

function sharedSection(): string {
  const text = read('docs/operations.md');
  const start = text.indexOf('**Settings every host shares.**');
  expect(start).toBeGreaterThan(0);
  return text.slice(start, text.indexOf('\n- **', start + 1));
}

describe('docs/operations.md: the settings every host shares', () => {
  it('names every setting the KEK, the control store, the subject-key store and the issuer are read from', () => {
    const read_ = [
      'src/keystore/kms/kms-from-env.ts',
      'src/keystore/master-key.ts',
      'src/control/control-store.ts',
      'src/subjects/open-subject-store.ts',
    ].flatMap((f) => read(f).match(SETTING) ?? []);
    const issuerReaders = ['src/cli/serve-command.ts', 'src/cli/gateway-command.ts', 'src/app/open-responders.ts'].filter((f) =>
      read(f).includes('VEIL_BASE_URL'),
    );
    expect(issuerReaders).toHaveLength(3);
    const wanted = new Set([...read_, 'VEIL_BASE_URL']);
    // the environment variable that names the KEK's own (a file path for development keys) is no setting of the shared KEK
    wanted.delete('VEIL_MASTER_KEY_FILE');
    expect(wanted.size).toBeGreaterThan(12);
    const section = sharedSection();
    expect([...wanted].filter((name) => !section.includes(`\`${name}`))).toEqual([]);
  });

  it('the compose file gives its veil services the same value of each shared setting', () => {
    const compose = read('docker-compose.yml');
    for (const name of ['VEIL_BASE_URL', 'VEIL_CONTROL_STORE', 'VEIL_KMS', 'VEIL_KMS_KEY_ID']) {
      const values = new Set([...compose.matchAll(new RegExp(`^\\s+${name}: (.+)$`, 'gm'))].map((m) => m[1]!.trim()));
      expect(values.size, name).toBe(1);
    }
  });
});
