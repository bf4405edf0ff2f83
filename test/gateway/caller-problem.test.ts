import { describe, expect, it } from 'vitest';
import { VeilError } from '../../src/engine/index.ts';
import { callerProblem, type ProtectCall } from '../../src/gateway/caller-problem.ts';
import { gatewaySchema } from '../../src/gateway/gateway-config.ts';
import { locate } from '../../src/gateway/json-fields.ts';
import { compileRoutes } from '../../src/gateway/routes.ts';
import { AuditError } from '../../src/audit/errors.ts';

const route = compileRoutes(
  gatewaySchema.parse({
    upstream: 'http://127.0.0.1:1',
    routes: [
      {
        method: 'POST',
        path: '/c',
        request: [
          { select: 'email', field: 'Customer.email' },
          { select: 'cards[*].number', field: 'Customer.cardNumber' },
        ],
        response: [],
      },
    ],
  }),
)[0]!;
const body = Buffer.from('{"email":"a@b.c","cards":[{"number":"1"},{"number":"2"}]}');
const call = (rolesFrom: ProtectCall['rolesFrom'] = 'token'): ProtectCall => ({
  route,
  body,
  located: locate(body, route.request.compiled),
  action: 'Protect',
  rolesFrom,
});
const RIGHTS = '00000000-0000-4000-8000-000000000001';

describe('callerProblem', () => {
  it("points at the value in the caller's body and names the caller's roles, not the gateway's transform call", () => {
    const engine = new VeilError('ACTION_NOT_GRANTED', `Protect on Customer.cardNumber is not granted to rights context ${RIGHTS}`, [
      {
        code: 'ACTION_NOT_GRANTED',
        pointer: '/requests/0/instances/2',
        request: '00000000-0000-4000-8002-000000000000',
        instance: 2,
        className: 'Customer',
        propertyName: 'cardNumber',
        message: `Protect on Customer.cardNumber is not granted to rights context ${RIGHTS}`,
      },
    ]);
    const out = callerProblem(engine, call());
    expect(out.code).toBe('ACTION_NOT_GRANTED');
    expect(out.message).toBe("Protect on Customer.cardNumber (at /cards/1/number) is not granted to the roles in the caller's token");
    expect(out.details).toEqual([
      { code: 'ACTION_NOT_GRANTED', pointer: '/cards/1/number', className: 'Customer', propertyName: 'cardNumber', message: out.message },
    ]);
    expect(out.cause).toBe(engine);
    expect(callerProblem(engine, call('protectAs')).message).toContain("the gateway's protectAs roles");
  });

  it('turns a refusal of the rights context into one of the request as a whole', () => {
    const engine = new VeilError('RIGHTS_CONTEXT_UNMATCHED', '/rightsContexts/0 matches no configured rights context', [
      { code: 'RIGHTS_CONTEXT_UNMATCHED', pointer: '/rightsContexts/0/evidences', message: '/rightsContexts/0 matches no configured rights context' },
    ]);
    const out = callerProblem(engine, call());
    expect(out.details).toEqual([
      {
        code: 'RIGHTS_CONTEXT_UNMATCHED',
        pointer: '',
        message: "the roles in the caller's token match no configured rights context, so nothing can be protected",
      },
    ]);
  });

  it("keeps a value error's message with the place added, and replaces any message naming the internal call", () => {
    const engine = new VeilError('VALUE_TOO_SHORT', 'x', [
      {
        code: 'VALUE_TOO_SHORT',
        pointer: '/requests/0/instances/0/value',
        instance: 0,
        className: 'Customer',
        propertyName: 'email',
        message: 'Customer.email value is too short',
      },
      {
        code: 'VALUE_NOT_IN_ALPHABET',
        pointer: '/requests/0/instances/1/value',
        instance: 1,
        className: 'Customer',
        propertyName: 'cardNumber',
        message: 'value at /requests/0/instances/1 is odd',
      },
    ]);
    const out = callerProblem(engine, call());
    expect(out.details.map((d) => [d.pointer, d.message])).toEqual([
      ['/email', 'Customer.email value is too short (at /email)'],
      ['/cards/0/number', 'The value holds characters the transformer cannot process: Customer.cardNumber (at /cards/0/number)'],
    ]);
    expect(out.message).toBe('2 problems in the call; the first: Customer.email value is too short (at /email)');
  });

  it('leaves failures of the service as they are', () => {
    const engine = new AuditError('AUDIT_UNAVAILABLE', 'the audit sink cannot record this unprotect, so it was refused');
    expect(callerProblem(engine, call())).toBe(engine);
  });
});
