import { describe, expect, it } from 'vitest';
import { ValueError, type BindRequest } from '../../src/engine/index.ts';
import { engineFixture, rotate, veilErrorOf } from '../helpers/engine-fixture.ts';

/**
 * Engine.bindRewrap: re-protection after a key rotation (stream and db rewrap). A value goes in
 * under an older key version and comes out under the primary one, equal to what a fresh protect
 * gives (deterministic sequences) or unprotecting to the same cleartext (randomized ones).
 */
const role = (value: string) => ({ name: 'Role', value });
const action = (value: string) => ({ name: 'Action', value });
const field = (propertyName: string) => ({ className: 'Customer', propertyName });
const versionOf = (value: string) => Buffer.from(value, 'base64url').readUInt32BE(1);

function rewrapRequest(over: Partial<BindRequest> & { unprotectEvidences?: BindRequest['processingEvidences'] } = {}) {
  return {
    identity: { roles: ['fraud'] },
    rightsEvidences: [role('fraud')],
    processingEvidences: [action('Protect')],
    unprotectEvidences: [action('Unprotect')],
    fields: [field('email'), field('name'), field('cardNumber')],
    ...over,
  };
}

describe('Engine.bindRewrap', () => {
  it('re-protects under the primary version: deterministic values equal a fresh protect, randomized ones unprotect to the same', () => {
    const { engine, keys } = engineFixture();
    const protect = engine.bind({
      identity: { roles: ['fraud'] },
      rightsEvidences: [role('fraud')],
      processingEvidences: [action('Protect')],
      fields: [field('email'), field('name'), field('cardNumber')],
    });
    const old = ['ada@example.com', 'Ada Lovelace', '4111-1111-1111-1111'].map((v, i) => protect.transforms[i]!(v));
    expect([versionOf(old[0]!), versionOf(old[1]!)]).toEqual([1, 1]);
    rotate(keys, 'customer-siv');
    rotate(keys, 'customer-gcm');
    const rewrap = engine.bindRewrap(rewrapRequest());
    expect(rewrap).toMatchObject({ action: 'Rewrap', reveals: false });
    const out = old.map((v, i) => rewrap.transforms[i]!(v));
    expect([versionOf(out[0]!), versionOf(out[1]!)]).toEqual([2, 2]);
    expect(out[0]).toBe(protect.transforms[0]!('ada@example.com'));
    const unprotect = engine.bind({
      identity: { roles: ['fraud'] },
      rightsEvidences: [role('fraud')],
      processingEvidences: [action('Unprotect')],
      fields: [field('name')],
    });
    expect(unprotect.transforms[0]!(out[1]!)).toBe('Ada Lovelace');
    // the card's FF1 key is pinned to version 1 in the configuration: its value stays as it was
    expect(out[2]).toBe(old[2]);
    // a value already under the primary version comes back equal (deterministic) and readable
    expect(rewrap.transforms[0]!(out[0]!)).toBe(out[0]);
  });

  it('many(): a value under a version the keystore does not hold, or not protected at all, is a ValueError; the others go through', () => {
    const { engine, keys } = engineFixture();
    const email = engine.bind({
      identity: { roles: ['fraud'] },
      rightsEvidences: [role('fraud')],
      processingEvidences: [action('Protect')],
      fields: [field('email')],
    }).transforms[0]!;
    const v1 = email('a@example.com');
    const unknownVersion = Buffer.from(v1, 'base64url');
    unknownVersion.writeUInt32BE(7, 1);
    rotate(keys, 'customer-siv');
    const rewrap = engine.bindRewrap(rewrapRequest({ fields: [field('email')] })).transforms[0]!;
    const out = rewrap.many([v1, unknownVersion.toString('base64url'), 'not protected', email('b@example.com')]);
    expect(versionOf(out[0] as string)).toBe(2);
    expect(out[1]).toBeInstanceOf(ValueError);
    expect(out[2]).toBeInstanceOf(ValueError);
    expect(out[3]).toBe(email('b@example.com'));
    // the refusal names no value
    expect(String((out[1] as ValueError).message)).not.toContain(v1.slice(5, 15));
  });

  it('needs both actions granted on every field, and a Protect and an Unprotect context', () => {
    const { engine } = engineFixture();
    // support may unprotect emails only
    veilErrorOf(
      () => engine.bindRewrap(rewrapRequest({ identity: { roles: ['support'] }, rightsEvidences: [role('support')], fields: [field('email'), field('name')] })),
      'ACTION_NOT_GRANTED',
    );
    // ingest may protect but not unprotect
    veilErrorOf(
      () => engine.bindRewrap(rewrapRequest({ identity: { roles: ['ingest'] }, rightsEvidences: [role('ingest')], fields: [field('email')] })),
      'ACTION_NOT_GRANTED',
    );
    veilErrorOf(
      () => engine.bindRewrap(rewrapRequest({ processingEvidences: [action('Unprotect')], unprotectEvidences: [action('Protect')], fields: [field('email')] })),
      'CONFIG_INVALID',
    );
  });
});
