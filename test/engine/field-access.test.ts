import { describe, expect, it } from 'vitest';
import { configuredRoles, fieldAccess, VeilError } from '../../src/engine/index.ts';
import { body, engineFixture } from '../helpers/engine-fixture.ts';
import { SECRET } from '../http/support.ts';

const { engine, config } = engineFixture();
const fields = [...config.classes].flatMap(([c, props]) => [...props.keys()].map((p) => [c, p] as const));
const roles = configuredRoles(config);

/** What a real call by the role does: its status, or the value it returns. */
function attempt(role: string, action: string, propertyName: string, value: string): { value?: string; status?: number } {
  try {
    const res = engine.transform(body({ roles: [role], action, instances: [[propertyName, value]] }), { roles: [role] });
    return { value: res.responses[0]!.instances[0]!.value };
  } catch (e) {
    if (e instanceof VeilError) return { status: e.status };
    throw e;
  }
}

describe('fieldAccess (the role × field view)', () => {
  it('answers for the example: support reads email, masks cards; ingest pseudonymizes names; fraud reads all reversible fields', () => {
    const view = Object.fromEntries(roles.map((r) => [r, fields.map(([c, p]) => fieldAccess(config, r, c, p).access).join(' ')]));
    expect(view).toEqual({
      fraud: 'clear clear clear clear denied',
      ingest: 'denied denied denied pseudonym denied',
      support: 'clear masked denied denied denied',
    });
    expect(fieldAccess(config, 'nobody', 'Customer', 'email')).toMatchObject({ access: 'denied', code: 'RIGHTS_CONTEXT_UNMATCHED' });
  });

  it.each(roles.flatMap((r) => fields.map(([c, p]) => [r, c, p] as const)))(
    '%s on %s.%s agrees with a real Unprotect call',
    (role, className, propertyName) => {
      const answer = fieldAccess(config, role, className, propertyName);
      const value = SECRET[propertyName as keyof typeof SECRET];
      const protectedValue = engine.transform(body({ roles: ['fraud'], action: 'Protect', instances: [[propertyName, value]] }), { roles: ['fraud'] })
        .responses[0]!.instances[0]!.value;
      const unprotect = attempt(role, 'Unprotect', propertyName, protectedValue);
      expect(answer.access === 'clear', `${role} ${propertyName}`).toBe(unprotect.value === value);
      if (answer.access === 'denied') {
        for (const action of config.classes.get(className)!.get(propertyName)!.actions.keys()) {
          if (action !== 'Protect') expect(attempt(role, action, propertyName, protectedValue).value).toBeUndefined();
        }
      }
      if (answer.action && answer.action !== 'Unprotect') {
        const read = attempt(role, answer.action, propertyName, protectedValue);
        expect(read.value).toBeDefined();
        expect(read.value).not.toBe(value);
      }
    },
  );
});
