import { describe, expect, it } from 'vitest';
import type { BindRequest } from '../../src/engine/index.ts';
import { body, engineFixture, veilErrorOf } from '../helpers/engine-fixture.ts';

/**
 * Engine.bind: what a stream pipeline does at start — authorize once for an identity, its rights
 * and processing evidences and a list of fields — with plan()'s checks and codes, and no request
 * body made up for it.
 */
const { engine } = engineFixture();
const role = (value: string) => ({ name: 'Role', value });
const action = (value: string) => ({ name: 'Action', value });
const field = (propertyName: string) => ({ className: 'Customer', propertyName });

function request(over: Partial<BindRequest> = {}): BindRequest {
  return {
    identity: { roles: ['ingest'] },
    rightsEvidences: [role('ingest')],
    processingEvidences: [action('Protect')],
    fields: [field('email'), field('name')],
    ...over,
  };
}

describe('Engine.bind', () => {
  it('returns the action and one transform per field, index-aligned, equal to what transform() does', () => {
    const bound = engine.bind(request({ fields: [field('email'), field('cardNumber'), field('email')] }));
    expect(bound.action).toBe('Protect');
    expect(bound.reveals).toBe(false);
    expect(bound.transforms).toHaveLength(3);
    const viaTransform = engine.transform(
      body({
        roles: ['ingest'],
        action: 'Protect',
        instances: [
          ['email', 'b@example.com'],
          ['cardNumber', '4111-1111-1111-1111'],
        ],
      }),
      { roles: ['ingest'] },
    );
    expect([bound.transforms[0]!('b@example.com'), bound.transforms[1]!('4111-1111-1111-1111')]).toEqual(
      viaTransform.responses[0]!.instances.map((i) => i.value),
    );
    expect(bound.transforms[2]!('b@example.com')).toBe(bound.transforms[0]!('b@example.com'));
  });

  it('says when the transforms reveal cleartext (an unprotect binding)', () => {
    const bound = engine.bind(
      request({ identity: { roles: ['fraud'] }, rightsEvidences: [role('fraud')], processingEvidences: [action('Unprotect')], fields: [field('email')] }),
    );
    expect(bound).toMatchObject({ action: 'Unprotect', reveals: true });
    const protectedEmail = engine.bind(request({ fields: [field('email')] })).transforms[0]!('r@example.com');
    expect(bound.transforms[0]!(protectedEmail)).toBe('r@example.com');
  });

  it.each([
    ['ROLE_NOT_HELD', request({ identity: { roles: [] } }), '/rightsEvidences/0/value', '/rightsEvidences/0 names a role the caller does not hold'],
    ['RIGHTS_CONTEXT_UNMATCHED', request({ rightsEvidences: [] }), '/rightsEvidences', '/rightsEvidences matches no configured rights context'],
    [
      'ACTION_NOT_GRANTED',
      request({ identity: { roles: ['support'] }, rightsEvidences: [role('support')], fields: [field('email'), field('name')] }),
      '/fields/1',
      'Protect on Customer.name is not granted to rights context support',
    ],
    ['FIELD_UNKNOWN', request({ fields: [field('shoeSize')] }), '/fields/0', 'Customer.shoeSize is not a configured class.property'],
    [
      'ACTION_NOT_CONFIGURED',
      request({ processingEvidences: [action('Pseudonymize')], fields: [field('email')] }),
      '/fields/0',
      'Customer.email has no sequence for Pseudonymize',
    ],
    [
      'EVIDENCE_UNKNOWN',
      request({ processingEvidences: [{ name: 'Acton', value: 'Protect' }] }),
      '/processingEvidences/0/name',
      '/processingEvidences/0: evidence name "Acton" is not used by any configured context',
    ],
    [
      'PROCESSING_CONTEXT_UNMATCHED',
      request({ processingEvidences: [action('Shred')] }),
      '/processingEvidences',
      '/processingEvidences matches no configured processing context',
    ],
  ] as const)('refuses with %s, pointing into the BindRequest', (code, req, pointer, message) => {
    const error = veilErrorOf(() => engine.bind(req), code);
    expect(error.details).toHaveLength(1);
    expect(error.details[0]).toMatchObject({ code, pointer, message });
    expect(error.message).toBe(message);
  });

  it("refusals carry plan()'s codes and message wording for the same contexts and fields", () => {
    const planned = veilErrorOf(
      () => engine.plan(body({ roles: ['support'], action: 'Protect', instances: [['name', 'x']] }), { roles: ['support'] }),
      'ACTION_NOT_GRANTED',
    );
    const bound = veilErrorOf(
      () => engine.bind(request({ identity: { roles: ['support'] }, rightsEvidences: [role('support')], fields: [field('name')] })),
      'ACTION_NOT_GRANTED',
    );
    expect(planned.message.replace(/rights context \S+$/, '')).toBe(bound.message.replace(/rights context \S+$/, ''));
    const roleNotHeld = veilErrorOf(
      () => engine.plan(body({ roles: ['fraud'], action: 'Protect', instances: [['name', 'x']] }), { roles: [] }),
      'ROLE_NOT_HELD',
    );
    expect(roleNotHeld.message).toBe('/rightsContexts/0/evidences/0 names a role the caller does not hold');
  });
});
