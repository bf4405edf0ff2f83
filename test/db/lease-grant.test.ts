import { describe, expect, it } from 'vitest';
import { leaseTerms } from '../../src/db/lease-grant.ts';
import { compileOrFail, engineFixture, identity, keysFor, rotate } from '../helpers/engine-fixture.ts';
import { personConfig } from '../helpers/subject-config.ts';
import { Engine } from '../../src/engine/index.ts';

/**
 * A lease is decided as a PROTECT of the field would be (role held, Protect granted, field
 * configured), and only for what the backend can reproduce: one AES-SIV or AES-GCM step under a
 * shared key. Everything else keeps the round trip (DB_LEASE_UNAVAILABLE).
 */
describe('leaseTerms', () => {
  const { engine, config, keys } = engineFixture();
  const source = { engine, config };
  const terms = (role: string, property: string, held = [role]) => leaseTerms(source, keys, identity(...held), role, 'Customer', property);
  const code = (fn: () => unknown) => {
    try {
      fn();
    } catch (e) {
      return (e as { code: string }).code;
    }
    return 'leased';
  };

  it("leases AES-SIV and AES-GCM fields with the engine's header, the binding label and the primary version", () => {
    const email = terms('ingest', 'email');
    expect(email).toMatchObject({ kind: 'aes-siv', keyId: 'customer-siv', version: 1, pinned: false, label: 'Customer.email' });
    expect([...email.header]).toEqual([0xa1, 0, 0, 0, 1]);
    expect(email.key).toHaveLength(64);
    expect(terms('ingest', 'name')).toMatchObject({ kind: 'aes-gcm', label: 'Customer.name' });
    const version = rotate(keys, 'customer-siv');
    expect(terms('ingest', 'email')).toMatchObject({ version, header: Uint8Array.of(0xa1, 0, 0, 0, version) });
  });

  it('refuses as a PROTECT is refused: a role not held, a field not granted, an unknown field', () => {
    expect(code(() => terms('ingest', 'email', ['support']))).toBe('ROLE_NOT_HELD');
    expect(code(() => terms('support', 'name'))).toBe('ACTION_NOT_GRANTED');
    expect(code(() => terms('ingest', 'shoeSize'))).toBe('FIELD_UNKNOWN');
  });

  it('leases no FF1, HMAC or subject-scoped key: DB_LEASE_UNAVAILABLE', () => {
    expect(code(() => terms('ingest', 'cardNumber'))).toBe('DB_LEASE_UNAVAILABLE');
    expect(code(() => terms('ingest', 'segmentKey'))).toBe('DB_LEASE_UNAVAILABLE');
    const people = compileOrFail(personConfig());
    const peopleKeys = keysFor(people);
    const peopleSource = { engine: new Engine({ config: people, keys: peopleKeys }), config: people };
    const person = (property: string) => code(() => leaseTerms(peopleSource, peopleKeys, identity('ingest'), 'ingest', 'Person', property));
    expect(person('email')).toBe('DB_LEASE_UNAVAILABLE');
    expect(person('name')).toBe('DB_LEASE_UNAVAILABLE');
    expect(person('city')).toBe('leased');
  });
});
