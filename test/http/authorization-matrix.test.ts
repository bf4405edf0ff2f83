import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTIONS, CLEAR, EXPECTED, OK, PROPERTIES, ROLES, type Action, type Property } from '../helpers/authorization-matrix.ts';
import { expectCardChanged } from '../helpers/engine-fixture.ts';
import type { TestService } from '../helpers/http-service.ts';
import { body, clientsYaml, expectProblem, startWith, transform } from './support.ts';

/** The example configuration's authorization matrix, over HTTP with one client per role. */
describe('authorization matrix over HTTP: role × action × field', () => {
  let svc: TestService;
  const tokens = {} as Record<(typeof ROLES)[number], string>;
  let protectedValues: Record<Property, string>;

  beforeAll(async () => {
    const clients = Object.fromEntries(ROLES.map((r) => [`matrix-${r}`, { secret: `matrix-secret-for-${r}-0123456789`, roles: [r] }]));
    svc = await startWith(await clientsYaml(clients));
    for (const r of ROLES) tokens[r] = await svc.token(`matrix-${r}`, clients[`matrix-${r}`]!.secret);
    const res = await transform(
      svc,
      tokens.fraud,
      body({ roles: ['fraud'], action: 'Protect', instances: PROPERTIES.map((p) => [p, CLEAR[p]] as [string, string]) }),
    );
    expect(res.status).toBe(200);
    const out = (res.json as { responses: { instances: { value: string }[] }[] }).responses[0]!.instances;
    protectedValues = Object.fromEntries(PROPERTIES.map((p, i) => [p, out[i]!.value])) as Record<Property, string>;
  }, 60_000);
  afterAll(async () => svc?.close());

  /** A card protected by the role allowed to protect every field. */
  const protectByFraud = async (card: string) => {
    const reply = await transform(svc, tokens.fraud, body({ roles: ['fraud'], action: 'Protect', instances: [['cardNumber', card]] }));
    return (reply.json as { responses: { instances: { value: string }[] }[] }).responses[0]!.instances[0]!.value;
  };

  const cells = ROLES.flatMap((role) =>
    ACTIONS.flatMap((action) => PROPERTIES.map((property) => ({ role, action, property, expected: EXPECTED[role][action][property] }))),
  );

  it.each(cells)('$role × $action × $property → $expected', async ({ role, action, property, expected }) => {
    const value = (action as Action) === 'Unprotect' ? protectedValues[property] : CLEAR[property];
    const reply = await transform(svc, tokens[role], body({ roles: [role], action, instances: [[property, value]] }));
    if (expected === OK) {
      expect(reply.status, reply.text).toBe(200);
      const got = (reply.json as { responses: { instances: { value: string }[] }[] }).responses[0]!.instances[0]!.value;
      if (action === 'Unprotect') expect(got).toBe(CLEAR[property]);
      // the card is protected by FF1 on 6 digits, which may leave it as it is (expectCardChanged)
      else if (action === 'Protect' && property === 'cardNumber') await expectCardChanged(CLEAR[property], got, protectByFraud);
      else expect(got).not.toBe(CLEAR[property]);
    } else {
      const p = expectProblem(reply, expected);
      expect(reply.text).not.toContain(value);
      if (expected === 'ACTION_NOT_GRANTED') expect(p.errors[0].message).toContain(`${action} on Customer.${property}`);
    }
  });
});
