import { describe, expect, it } from 'vitest';
import { body, engineFixture, expectCardChanged, identity, valuesOf, veilErrorOf } from '../helpers/engine-fixture.ts';
import {
  ACTIONS,
  CLEAR,
  DENIED,
  EXPECTED,
  NO_RIGHTS,
  NO_SEQUENCE,
  OK,
  PROPERTIES,
  ROLES,
  type Action,
  type Property,
} from '../helpers/authorization-matrix.ts';

const { engine } = engineFixture();

/** Customer.`property` `value` protected by the only role allowed to protect every field. */
const protect = (property: Property, value: string) =>
  valuesOf(engine.transform(body({ roles: ['fraud'], action: 'Protect', instances: [[property, value]] }), identity('fraud')))[0]!;

/** Protected forms of CLEAR. */
const PROTECTED = Object.fromEntries(PROPERTIES.map((p) => [p, protect(p, CLEAR[p])])) as Record<Property, string>;

/** The input of an action: Unprotect takes a protected value, the others cleartext. */
const inputOf = (action: Action, property: Property) => (action === 'Unprotect' ? PROTECTED[property] : CLEAR[property]);

/** What a successful result must look like, by action and property. */
function expectSuccess(action: Action, property: Property, output: string): void {
  switch (action) {
    case 'Unprotect':
      expect(output).toBe(CLEAR[property]);
      return;
    case 'Mask':
      expect(output).toBe('****-****-****-5559');
      return;
    case 'Pseudonymize':
      expect(output).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(output).not.toBe(CLEAR[property]);
      // a pseudonym of name differs from the Protect output of name (randomized AEAD)
      expect(output).not.toBe(PROTECTED[property]);
      return;
    case 'Protect':
      // the card is protected by FF1 on 6 digits, which may leave it as it is (expectCardChanged)
      if (property === 'cardNumber') expectCardChanged(CLEAR[property], output, (v) => protect(property, v));
      else expect(output).not.toBe(CLEAR[property]);
      return;
  }
}

const CELLS = ROLES.flatMap((role) =>
  ACTIONS.flatMap((action) => PROPERTIES.map((property) => [role, action, property, EXPECTED[role][action][property]] as const)),
);

describe('authorization matrix of config/example.yaml', () => {
  it('covers 4 roles × 4 actions × every Customer property of the example', () => {
    expect(CELLS).toHaveLength(4 * 4 * 5);
    const { config } = engineFixture();
    expect([...config.classes.get('Customer')!.keys()].sort()).toEqual([...PROPERTIES].sort());
    expect(config.rightsContexts.map((c) => c.name).sort()).toEqual(['fraud', 'ingest', 'support']);
  });

  it.each(CELLS)('role %s, %s on Customer.%s → %s', (role, action, property, expected) => {
    const req = body({ roles: [role], action, instances: [[property, inputOf(action, property)]] });
    const call = () => engine.transform(req, identity(role));
    if (expected === OK) {
      const res = call();
      expect(res.responses).toHaveLength(1);
      expectSuccess(action, property, valuesOf(res)[0]!);
      return;
    }
    const err = veilErrorOf(call, expected);
    expect(err.details).toHaveLength(1);
    if (expected === NO_RIGHTS) {
      expect(err.details[0]).toMatchObject({ pointer: '/rightsContexts/0/evidences' });
    } else {
      expect(err.details[0]).toMatchObject({
        request: req.requests[0]!.guid,
        instance: 0,
        pointer: '/requests/0/instances/0',
        className: 'Customer',
        propertyName: property,
      });
    }
    expect(JSON.stringify(err)).not.toContain(inputOf(action, property));
  });

  it.each(ROLES.filter((r) => r !== 'none'))('role %s: all of a row in one call fails unless every cell is ok, and lists exactly the denied cells', (role) => {
    for (const action of ACTIONS) {
      const req = body({ roles: [role], action, instances: PROPERTIES.map((p) => [p, inputOf(action, p)] as [string, string]) });
      const cells = PROPERTIES.map((p) => EXPECTED[role][action][p]);
      const call = () => engine.transform(req, identity(role));
      if (cells.every((c) => c === OK)) {
        expect(valuesOf(call())).toHaveLength(PROPERTIES.length);
        continue;
      }
      // grants are checked before configuration: if any cell is denied, only denials are listed
      const stage = cells.includes(DENIED) ? DENIED : NO_SEQUENCE;
      const err = veilErrorOf(call, stage);
      expect(err.details.map((d) => d.propertyName)).toEqual(PROPERTIES.filter((p) => EXPECTED[role][action][p] === stage));
    }
  });
});

describe('roles come from the identity and from the body, both', () => {
  it('holding a role is not enough: the body must claim it in its rights context', () => {
    // identity holds fraud and ingest, the body claims only ingest: Unprotect (fraud's) is not granted
    const req = body({ roles: ['ingest'], action: 'Unprotect', instances: [['email', PROTECTED.email]] });
    const err = veilErrorOf(() => engine.transform(req, identity('ingest', 'fraud')), 'ACTION_NOT_GRANTED');
    expect(err.details).toEqual([expect.objectContaining({ propertyName: 'email', instance: 0 })]);
  });

  it('claiming a role is not enough: the identity must hold it', () => {
    const req = body({ roles: ['fraud'], action: 'Unprotect', instances: [['email', PROTECTED.email]] });
    veilErrorOf(() => engine.transform(req, identity('ingest')), 'ROLE_NOT_HELD');
  });

  it('claiming nothing grants nothing, whatever the identity holds', () => {
    const req = body({ rights: [], action: 'Protect', instances: [['email', CLEAR.email]] });
    veilErrorOf(() => engine.transform(req, identity('ingest', 'support', 'fraud')), 'RIGHTS_CONTEXT_UNMATCHED');
  });

  it('one call may hold requests under different rights contexts; each is authorized on its own', () => {
    const res = engine.transform(
      body(
        { roles: ['support'], action: 'Unprotect', instances: [['email', PROTECTED.email]] },
        { roles: ['fraud'], action: 'Unprotect', instances: [['cardNumber', PROTECTED.cardNumber]] },
      ),
      identity('support', 'fraud'),
    );
    expect([valuesOf(res, 0), valuesOf(res, 1)]).toEqual([[CLEAR.email], [CLEAR.cardNumber]]);
    // support's request may not borrow fraud's grant from the other rights context
    veilErrorOf(
      () =>
        engine.transform(
          body(
            { roles: ['support'], action: 'Unprotect', instances: [['cardNumber', PROTECTED.cardNumber]] },
            { roles: ['fraud'], action: 'Unprotect', instances: [['email', PROTECTED.email]] },
          ),
          identity('support', 'fraud'),
        ),
      'ACTION_NOT_GRANTED',
    );
  });
});
