import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { freePorts, ROOT } from '../../helpers/processes.ts';

/** examples/gateway/run.sh as docs/gateway.md runs it: the app, veil serve and veil gateway as processes. */
describe('the gateway example (docs/gateway.md)', () => {
  it('stores only protected values and reveals by role', async () => {
    const port = await freePorts(3);
    const { stdout } = await promisify(execFile)('sh', [join(ROOT, 'examples/gateway/run.sh')], {
      env: { ...process.env, UPSTREAM_PORT: String(port), VEIL_PORT: String(port + 1), GATEWAY_PORT: String(port + 2) },
      timeout: 90_000,
    });
    const after = (heading: string) => JSON.parse(stdout.split('\n')[stdout.split('\n').findIndex((l) => l.startsWith(`--- ${heading}`)) + 1]!);
    const stored = after('what the app stored');
    for (const clear of ['alice@example.com', 'Alice Martin', '4111-1111-1111-1111', 'bob@example.com']) expect(JSON.stringify(stored)).not.toContain(clear);
    expect(stored.plan).toBe('gold');
    const support = after('GET /customers/1 through the gateway, role support');
    expect(support).toMatchObject({
      email: 'alice@example.com',
      card: { number: '****-****-****-1111' },
      name: stored.name,
      contacts: [{ 'e-mail': 'bob@example.com' }],
    });
    expect(after('GET /customers/1 through the gateway, role fraud')).toMatchObject({
      email: 'alice@example.com',
      name: 'Alice Martin',
      card: { number: '4111-1111-1111-1111' },
    });
    // a drifted field: refused by the unmapped guard naming path and kind, never the value; the app got nothing
    const drifted = after('POST with a drifted field');
    expect(drifted).toMatchObject({
      status: 422,
      code: 'UNMAPPED_PERSONAL_DATA',
      pointer: '/emailAddress',
      unmapped: [{ path: 'emailAddress', kind: 'email', pointer: '/emailAddress', key: false }],
    });
    expect(JSON.stringify(drifted)).not.toContain('carol@example.com');
    const held = after('what the app holds now');
    expect(held).toHaveLength(1);
    expect(JSON.stringify(held)).not.toContain('carol@example.com');
    expect(stdout).toContain('hello from the upstream, untouched');
    expect(after('POST without a token')).toMatchObject({ status: 401, code: 'TOKEN_MISSING' });
  }, 120_000);
});
