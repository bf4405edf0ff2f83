import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { leaseTerms } from '../../src/db/lease-grant.ts';
import { leaseGrantFrame } from '../../src/db/lease-frames.ts';
import { body, engineFixture, identity, valuesOf } from '../helpers/engine-fixture.ts';

/**
 * The engine's output format has one home (src/engine); the database's leased keys re-implement
 * two of its steps in Python (veil_lease.py). These shared vectors hold them together: the
 * engine protects values, the Python sealer — fed the LEASE_GRANT frame veil would send, parsed
 * by veil_socket.py's reader — protects the same values, and the outputs must be byte-identical
 * (AES-GCM with the nonce pinned on both sides), on the fast OpenSSL path and on the public-API
 * fallback. Run by the interpreter PL/Python uses (Debian's python3 with python3-cryptography).
 */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const source = ['veil_socket.py', 'veil_lease.py'].map((f) => readFileSync(new URL(`../../src/db/plpython/${f}`, import.meta.url), 'utf8')).join('\n');
const VALUES = ['alice@example.com', 'a', 'x'.repeat(300), 'Zoë Ørsted 😀 名前', 'user+tag@example.org'];
const NONCE = 7;

function pythonSeal(frame: Buffer, values: readonly string[], fallback: boolean): string[] {
  const script = `${source}
import json, sys
os.urandom = lambda n: bytes([${NONCE}]) * n
${fallback ? 'openssl_sealer = lambda siv, key: 1 / 0' : ''}
data = bytes.fromhex(sys.argv[1])
kind, grant = parse_reply(data[4:])
try:
    fast = openssl_sealer(grant['kind'] == 1, grant['key']) is not None
except Exception:
    fast = False
seal = lease_sealer(grant)
print(json.dumps([fast, [seal(v) for v in json.loads(sys.argv[2])]]))`;
  const [fast, sealed] = JSON.parse(execFileSync(PYTHON, ['-c', script, frame.toString('hex'), JSON.stringify(values)], { encoding: 'utf8' })) as [
    boolean,
    string[],
  ];
  // this interpreter's python3-cryptography has the bindings the fast path takes (Debian 12's 38.0)
  expect(fast).toBe(!fallback);
  return sealed;
}

/** The grant of lease 1 (10 s, 64 values of at most 10,000 characters) on `terms`. */
function grantFrame(terms: ReturnType<typeof leaseTerms>): Buffer {
  return leaseGrantFrame({
    lease: 1,
    validForMs: 10_000,
    budget: 64,
    maxChars: 10_000,
    kind: terms.kind,
    header: terms.header,
    label: terms.label,
    key: terms.key,
  });
}

describe('leased keys seal as the engine protects', () => {
  const { engine, config, keys } = engineFixture(undefined, { random: (b) => b.fill(NONCE) });
  const caller = identity('ingest');
  const protect = (property: string) =>
    valuesOf(engine.transform(body({ roles: ['ingest'], action: 'Protect', instances: VALUES.map((v) => [property, v] as const) }), caller));

  for (const property of ['email', 'name']) {
    it(`Customer.${property} (${property === 'email' ? 'AES-SIV' : 'AES-GCM, nonce pinned'}): byte for byte, fast path and fallback`, () => {
      const frame = grantFrame(leaseTerms({ engine, config }, keys, caller, 'ingest', 'Customer', property));
      const expected = protect(property);
      expect(pythonSeal(frame, VALUES, false)).toEqual(expected);
      expect(pythonSeal(frame, VALUES, true)).toEqual(expected);
    });
  }

  it('a randomized value the backend sealed unprotects through the engine', () => {
    const { engine: live, config: liveConfig, keys: liveKeys } = engineFixture();
    const frame = grantFrame(leaseTerms({ engine: live, config: liveConfig }, liveKeys, caller, 'ingest', 'Customer', 'name'));
    const sealed = pythonSeal(frame, VALUES, false);
    expect(
      valuesOf(live.transform(body({ roles: ['fraud'], action: 'Unprotect', instances: sealed.map((v) => ['name', v] as const) }), identity('fraud'))),
    ).toEqual(VALUES);
  });
});
