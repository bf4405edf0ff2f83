import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  Engine,
  ENGINE_ERRORS,
  MemoryKeyProvider,
  transformResponseSchema,
  VeilError,
  type EngineErrorCode,
  type ErrorDetail,
  type TransformRequest,
} from '../../src/engine/index.ts';
import {
  EXAMPLE_CONFIG_TEXT,
  body,
  compileOrFail,
  engineFixture,
  expectCardChanged,
  fixtureText,
  identity,
  nextCard,
  requestSpec,
  rotate,
  tamper,
  transformRequest,
  valuesOf,
  veilErrorOf,
  withKeyVersion,
} from '../helpers/engine-fixture.ts';

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** A body as plain JSON, to be broken in tests of the shape checks. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;

/** Sample values of the example's Customer fields; each valid for its protect sequence. */
const SAMPLE = {
  email: 'ottilie.vandersloot@example.org',
  cardNumber: '4929-3810-7745-2261',
  nationalId: 'QQ123456C',
  name: 'Zéphyrine Quixote-Blomqvist',
  segmentKey: 'segment-0042',
} as const;

const REVERSIBLE = ['email', 'cardNumber', 'nationalId', 'name'] as const;

const fraud = identity('fraud');

function digitsOf(s: string): string {
  return s.replace(/\D/g, '');
}

/** One value of Customer.`property` protected by fraud on `engine`. */
function protectOne(engine: Engine, property: string, value: string): string {
  return valuesOf(engine.transform(transformRequest('fraud', 'Protect', [property, value]), fraud))[0]!;
}

describe('Engine: response shape (spec §2.7, §4.1)', () => {
  const { engine } = engineFixture();

  it('answers one response per request, linked by request guid, in request order, instances in order with className/propertyName', () => {
    const req = body(
      requestSpec('fraud', 'Protect', ['email', SAMPLE.email], ['cardNumber', SAMPLE.cardNumber], ['email', 'second@example.org']),
      requestSpec('ingest', 'Pseudonymize', ['name', SAMPLE.name]),
      requestSpec('support', 'Mask', ['cardNumber', SAMPLE.cardNumber]),
      requestSpec('fraud', 'Protect', ['nationalId', SAMPLE.nationalId], ['segmentKey', SAMPLE.segmentKey]),
    );
    const identityOfAll = identity('fraud', 'ingest', 'support');
    const res = engine.transform(req, identityOfAll);

    expect(transformResponseSchema.safeParse(res).success).toBe(true);
    expect(Object.keys(res)).toEqual(['responses']);
    expect(res.responses.map((r) => r.request)).toEqual(req.requests.map((r) => r.guid));
    res.responses.forEach((r, i) => {
      expect(Object.keys(r).sort()).toEqual(['instances', 'request']);
      const sent = req.requests[i]!.instances;
      expect(r.instances).toHaveLength(sent.length);
      r.instances.forEach((inst, j) => {
        expect(Object.keys(inst).sort()).toEqual(['className', 'propertyName', 'value']);
        expect(inst.className).toBe(sent[j]!.className);
        expect(inst.propertyName).toBe(sent[j]!.propertyName);
        expect(typeof inst.value).toBe('string');
        // the card of request 0 is protected by FF1 on 6 digits, which may leave it as it is (expectCardChanged)
        if (i === 0 && inst.propertyName === 'cardNumber') expectCardChanged(sent[j]!.value, inst.value, (v) => protectOne(engine, 'cardNumber', v));
        else expect(inst.value).not.toBe(sent[j]!.value);
      });
    });
    // the two emails of request 0 are different values: their outputs differ too (order kept)
    expect(res.responses[0]!.instances[0]!.value).not.toBe(res.responses[0]!.instances[2]!.value);
  });

  it('does not modify the request body', () => {
    const req = transformRequest('fraud', 'Protect', ['email', SAMPLE.email], ['name', SAMPLE.name]);
    const copy = structuredClone(req);
    engine.transform(req, fraud);
    expect(req).toEqual(copy);
  });

  it('answers an empty requests array with an empty responses array', () => {
    expect(engine.transform({ rightsContexts: [], processingContexts: [], requests: [] }, identity())).toEqual({ responses: [] });
  });

  it('answers a request with no instances with a response with no instances', () => {
    const req = transformRequest('fraud', 'Protect');
    expect(engine.transform(req, fraud)).toEqual({ responses: [{ request: req.requests[0]!.guid, instances: [] }] });
  });

  it('keeps the request guid as written (upper case) in the response', () => {
    const req = transformRequest('fraud', 'Protect', ['email', SAMPLE.email]);
    req.requests[0]!.guid = req.requests[0]!.guid.toUpperCase();
    expect(engine.transform(req, fraud).responses[0]!.request).toBe(req.requests[0]!.guid);
  });

  it('ignores contexts no request refers to (their evidences are not matched)', () => {
    const req = transformRequest('fraud', 'Protect', ['email', SAMPLE.email]);
    req.rightsContexts.push({ guid: randomUUID(), evidences: [{ name: 'Nonsense', value: 'x' }] });
    req.processingContexts.push({ guid: randomUUID(), evidences: [{ name: 'Action', value: 'Shred' }] });
    expect(engine.transform(req, fraud).responses).toHaveLength(1);
  });

  it('lets several requests share one rights context and one processing context', () => {
    const req = transformRequest('fraud', 'Protect', ['email', SAMPLE.email]);
    req.requests.push({ ...req.requests[0]!, guid: randomUUID(), instances: [{ className: 'Customer', propertyName: 'email', value: SAMPLE.email }] });
    const res = engine.transform(req, fraud);
    expect(res.responses.map((r) => r.request)).toEqual(req.requests.map((r) => r.guid));
    expect(valuesOf(res, 0)).toEqual(valuesOf(res, 1));
  });
});

describe('Engine: protect → unprotect round trips of config/example.yaml', () => {
  const { engine, config } = engineFixture();

  it('the reversible properties of the example are exactly those with an Unprotect plan', () => {
    const customer = config.classes.get('Customer')!;
    expect([...customer.keys()].sort()).toEqual(Object.keys(SAMPLE).sort());
    expect(
      [...customer.values()]
        .filter((f) => f.actions.has('Unprotect'))
        .map((f) => f.propertyName)
        .sort(),
    ).toEqual([...REVERSIBLE].sort());
  });

  it.each(REVERSIBLE)('Customer.%s: protect then unprotect restores the value', (property) => {
    const value = SAMPLE[property];
    const protectedValue = protectOne(engine, property, value);
    if (property === 'cardNumber') expectCardChanged(value, protectedValue, (v) => protectOne(engine, property, v));
    else expect(protectedValue).not.toBe(value);
    const back = valuesOf(engine.transform(transformRequest('fraud', 'Unprotect', [property, protectedValue]), fraud))[0];
    expect(back).toBe(value);
  });

  it('round-trips all reversible fields in one call, and edge values (empty email, unicode name)', () => {
    const values: [string, string][] = [
      ['email', ''],
      ['email', SAMPLE.email],
      ['name', '李小龍 🐉 Ørsted'],
      ['name', ''],
      ['cardNumber', '4111 1111 1111 1111'],
      ['cardNumber', '4111111111111111222'],
      ['nationalId', 'AB-12-CD'],
    ];
    const prot = valuesOf(engine.transform(transformRequest('fraud', 'Protect', ...values), fraud));
    const back = valuesOf(engine.transform(transformRequest('fraud', 'Unprotect', ...values.map(([p], i) => [p, prot[i]!] as [string, string])), fraud));
    expect(back).toEqual(values.map(([, v]) => v));
  });

  it('email (aes-siv) is deterministic base64url text', () => {
    const run = () => valuesOf(engine.transform(transformRequest('fraud', 'Protect', ['email', SAMPLE.email]), fraud))[0]!;
    const a = run();
    expect(a).toMatch(BASE64URL);
    expect(run()).toBe(a);
  });

  it('name (aes-gcm) is randomized: equal values protect differently, both unprotect', () => {
    const prot = valuesOf(engine.transform(transformRequest('fraud', 'Protect', ['name', SAMPLE.name], ['name', SAMPLE.name]), fraud));
    expect(prot[0]).toMatch(BASE64URL);
    expect(prot[0]).not.toBe(prot[1]);
    const back = valuesOf(engine.transform(transformRequest('fraud', 'Unprotect', ...prot.map((p) => ['name', p] as [string, string])), fraud));
    expect(back).toEqual([SAMPLE.name, SAMPLE.name]);
  });

  it('name with an injected random source protects deterministically (nonce comes from `random`)', () => {
    const fixed = engineFixture(EXAMPLE_CONFIG_TEXT, { random: (b) => b.fill(7) });
    const prot = valuesOf(fixed.engine.transform(transformRequest('fraud', 'Protect', ['name', SAMPLE.name], ['name', SAMPLE.name]), fraud));
    expect(prot[0]).toBe(prot[1]);
  });

  it('cardNumber (ff1, keep 6 first and 4 last) keeps length, separators, BIN and last four', () => {
    const prot = valuesOf(engine.transform(transformRequest('fraud', 'Protect', ['cardNumber', SAMPLE.cardNumber]), fraud))[0]!;
    expect(prot).toHaveLength(SAMPLE.cardNumber.length);
    expect(prot.replace(/\d/g, '0')).toBe(SAMPLE.cardNumber.replace(/\d/g, '0'));
    const [clear, out] = [digitsOf(SAMPLE.cardNumber), digitsOf(prot)];
    expect(out.slice(0, 6)).toBe(clear.slice(0, 6));
    expect(out.slice(-4)).toBe(clear.slice(-4));
    // the 6 digits between are encrypted (with the others kept, the card changes iff they do)
    expectCardChanged(SAMPLE.cardNumber, prot, (v) => protectOne(engine, 'cardNumber', v));
  });

  it('nextCard (the check when FF1 leaves a card as it is) moves the encrypted digits only, by one, wrapping', () => {
    expect(nextCard(SAMPLE.cardNumber)).toBe('4929-3810-7746-2261');
    expect(nextCard('4111 1199 9999 1234')).toBe('4111 1100 0000 1234');
    expect(nextCard('4111119999991234567')).toBe('4111119999991244567');
  });

  it('nationalId (ff1, alnum-upper) keeps length and alphabet; equal values protect equally', () => {
    const prot = valuesOf(engine.transform(transformRequest('fraud', 'Protect', ['nationalId', SAMPLE.nationalId], ['nationalId', SAMPLE.nationalId]), fraud));
    expect(prot[0]).toMatch(/^[0-9A-Z]{9}$/);
    expect(prot[0]).toBe(prot[1]);
  });

  it('segmentKey and name pseudonyms (hmac-sha256) are deterministic and field-bound', () => {
    const res = engine.transform(
      body(requestSpec('fraud', 'Protect', ['segmentKey', 'same'], ['segmentKey', 'same']), requestSpec('ingest', 'Pseudonymize', ['name', 'same'])),
      identity('fraud', 'ingest'),
    );
    const [a, b] = valuesOf(res, 0);
    expect(a).toMatch(BASE64URL);
    expect(a).toBe(b);
    // same sequence, same key, same value, other field: another pseudonym
    expect(valuesOf(res, 1)[0]).not.toBe(a);
  });

  it('a key rotation changes new aes-siv output; values protected under the old version still unprotect', () => {
    const f = engineFixture();
    const protectEmail = () => valuesOf(f.engine.transform(transformRequest('fraud', 'Protect', ['email', SAMPLE.email]), fraud))[0]!;
    const before = protectEmail();
    rotate(f.keys, 'customer-siv');
    const after = protectEmail();
    expect(after).not.toBe(before);
    const back = valuesOf(f.engine.transform(transformRequest('fraud', 'Unprotect', ['email', before], ['email', after]), fraud));
    expect(back).toEqual([SAMPLE.email, SAMPLE.email]);
  });

  it('ff1 uses the pinned key version: adding a newer version of pan-ff1 changes nothing', () => {
    const f = engineFixture();
    const protectCard = () => valuesOf(f.engine.transform(transformRequest('fraud', 'Protect', ['cardNumber', SAMPLE.cardNumber]), fraud))[0]!;
    const before = protectCard();
    rotate(f.keys, 'pan-ff1');
    expect(protectCard()).toBe(before);
  });

  it('two engines with different keys produce outputs the other cannot unprotect', () => {
    const other = engineFixture();
    const prot = valuesOf(engine.transform(transformRequest('fraud', 'Protect', ['email', SAMPLE.email]), fraud))[0]!;
    veilErrorOf(() => other.engine.transform(transformRequest('fraud', 'Unprotect', ['email', prot]), fraud), 'PROTECTED_VALUE_INVALID');
  });
});

describe('Engine: identifier rules (spec §2.8)', () => {
  const { engine } = engineFixture();
  const ok = () => transformRequest('fraud', 'Protect', ['email', SAMPLE.email]);

  it.each([
    [
      'rightsContexts',
      (b: TransformRequest) => {
        b.rightsContexts[0]!.guid = 'rc-1';
        b.requests[0]!.rightsContext = 'rc-1';
      },
      '/rightsContexts/0/guid',
    ],
    [
      'processingContexts',
      (b: TransformRequest) => {
        b.processingContexts[0]!.guid = '{not-a-uuid}';
        b.requests[0]!.processingContext = '{not-a-uuid}';
      },
      '/processingContexts/0/guid',
    ],
    [
      'requests',
      (b: TransformRequest) => {
        b.requests[0]!.guid = '1234';
      },
      '/requests/0/guid',
    ],
    [
      'requests (uuid without dashes)',
      (b: TransformRequest) => {
        b.requests[0]!.guid = randomUUID().replaceAll('-', '');
      },
      '/requests/0/guid',
    ],
    [
      'requests (uuid with braces)',
      (b: TransformRequest) => {
        b.requests[0]!.guid = `{${randomUUID()}}`;
      },
      '/requests/0/guid',
    ],
    [
      'requests (empty)',
      (b: TransformRequest) => {
        b.requests[0]!.guid = '';
      },
      '/requests/0/guid',
    ],
  ])('a guid in %s that is not a UUID → GUID_INVALID at its pointer', (_where, mutate, pointer) => {
    const req = ok();
    mutate(req);
    const err = veilErrorOf(() => engine.transform(req, fraud), 'GUID_INVALID');
    expect(err.status).toBe(400);
    expect(err.details).toEqual([expect.objectContaining({ code: 'GUID_INVALID', pointer })]);
  });

  it('reports every invalid guid at once', () => {
    const req = ok();
    req.requests[0]!.guid = 'x';
    req.rightsContexts.push({ guid: 'y', evidences: [] });
    const err = veilErrorOf(() => engine.transform(req, fraud), 'GUID_INVALID');
    expect(err.details.map((d) => d.pointer).sort()).toEqual(['/requests/0/guid', '/rightsContexts/1/guid']);
  });

  it('accepts upper-case UUIDs and UUIDs of any version', () => {
    const req = ok();
    req.rightsContexts[0]!.guid = req.rightsContexts[0]!.guid.toUpperCase();
    req.requests[0]!.rightsContext = req.rightsContexts[0]!.guid;
    req.requests[0]!.guid = '00000000-0000-0000-0000-000000000000';
    req.processingContexts[0]!.guid = '01890a5d-ac96-774b-bcce-b302099a8057'; // v7
    req.requests[0]!.processingContext = req.processingContexts[0]!.guid;
    expect(engine.transform(req, fraud).responses[0]!.request).toBe('00000000-0000-0000-0000-000000000000');
  });

  it('a guid repeated within rightsContexts → GUID_DUPLICATE at the second one', () => {
    const req = ok();
    req.rightsContexts.push({ guid: req.rightsContexts[0]!.guid, evidences: [{ name: 'Role', value: 'fraud' }] });
    const err = veilErrorOf(() => engine.transform(req, fraud), 'GUID_DUPLICATE');
    expect(err.details).toEqual([expect.objectContaining({ code: 'GUID_DUPLICATE', pointer: '/rightsContexts/1/guid' })]);
    expect(err.details[0]!.message).toContain('/rightsContexts/0/guid');
  });

  it('a guid repeated within processingContexts and within requests → GUID_DUPLICATE for each', () => {
    const req = body(requestSpec('fraud', 'Protect', ['email', SAMPLE.email]), requestSpec('fraud', 'Protect', ['email', SAMPLE.email]));
    req.processingContexts[1]!.guid = req.processingContexts[0]!.guid;
    req.requests[1]!.processingContext = req.processingContexts[0]!.guid;
    req.requests[1]!.guid = req.requests[0]!.guid;
    const err = veilErrorOf(() => engine.transform(req, fraud), 'GUID_DUPLICATE');
    expect(err.details.map((d) => [d.code, d.pointer])).toEqual([
      ['GUID_DUPLICATE', '/processingContexts/1/guid'],
      ['GUID_DUPLICATE', '/requests/1/guid'],
    ]);
    expect(err.details.map((d) => d.message)).toEqual([
      '/processingContexts/1/guid repeats the guid of /processingContexts/0/guid',
      '/requests/1/guid repeats the guid of /requests/0/guid',
    ]);
  });

  it('a guid repeated across the three arrays, differing only in case → GUID_DUPLICATE', () => {
    const req = ok();
    const shared = req.rightsContexts[0]!.guid;
    req.processingContexts[0]!.guid = shared.toUpperCase();
    req.requests[0]!.processingContext = shared.toUpperCase();
    req.requests[0]!.guid = shared.replace(/[a-f]/, (c) => c.toUpperCase());
    const err = veilErrorOf(() => engine.transform(req, fraud), 'GUID_DUPLICATE');
    expect(err.details.map((d) => d.pointer)).toEqual(['/processingContexts/0/guid', '/requests/0/guid']);
    expect(err.details.every((d) => d.message.includes('/rightsContexts/0/guid'))).toBe(true);
  });

  it('a request guid equal to a context guid → GUID_DUPLICATE', () => {
    const req = ok();
    req.requests[0]!.guid = req.processingContexts[0]!.guid;
    const err = veilErrorOf(() => engine.transform(req, fraud), 'GUID_DUPLICATE');
    expect(err.details).toEqual([expect.objectContaining({ pointer: '/requests/0/guid' })]);
  });

  it('rightsContext naming no rights context → REFERENCE_UNRESOLVED with pointer and request guid', () => {
    const req = ok();
    req.requests[0]!.rightsContext = randomUUID();
    const err = veilErrorOf(() => engine.transform(req, fraud), 'REFERENCE_UNRESOLVED');
    expect(err.details).toEqual([
      expect.objectContaining({ code: 'REFERENCE_UNRESOLVED', pointer: '/requests/0/rightsContext', request: req.requests[0]!.guid }),
    ]);
  });

  it('processingContext naming no processing context → REFERENCE_UNRESOLVED', () => {
    const req = ok();
    req.requests[0]!.processingContext = randomUUID();
    const err = veilErrorOf(() => engine.transform(req, fraud), 'REFERENCE_UNRESOLVED');
    expect(err.details).toEqual([expect.objectContaining({ pointer: '/requests/0/processingContext', request: req.requests[0]!.guid })]);
  });

  it('references into the wrong array do not resolve: rightsContext naming a processing context', () => {
    const req = ok();
    [req.requests[0]!.rightsContext, req.requests[0]!.processingContext] = [req.requests[0]!.processingContext, req.requests[0]!.rightsContext];
    const err = veilErrorOf(() => engine.transform(req, fraud), 'REFERENCE_UNRESOLVED');
    expect(err.details.map((d) => d.pointer)).toEqual(['/requests/0/rightsContext', '/requests/0/processingContext']);
  });

  it('references resolve whatever the case of the UUID (uniqueness is case-insensitive, so resolution is too)', () => {
    // regression: references once resolved case-insensitively in checkIdentifiers but
    // case-sensitively in resolveContexts, and the call crashed with a TypeError
    const req = ok();
    req.requests[0]!.rightsContext = req.rightsContexts[0]!.guid.toUpperCase();
    req.requests[0]!.processingContext = req.processingContexts[0]!.guid.toUpperCase();
    let result: unknown;
    try {
      result = engine.transform(req, fraud);
    } catch (e) {
      result = e;
    }
    expect(result).not.toBeInstanceOf(TypeError);
    expect(result).toEqual({ responses: [{ request: req.requests[0]!.guid, instances: [expect.objectContaining({ propertyName: 'email' })] }] });
  });
});

describe('Engine: malformed bodies → REQUEST_MALFORMED with JSON pointer', () => {
  const { engine } = engineFixture();
  const ok = () => transformRequest('fraud', 'Protect', ['email', SAMPLE.email]);
  const malformed = (b: unknown) => veilErrorOf(() => engine.transform(b, fraud), 'REQUEST_MALFORMED');

  it.each([null, undefined, 'a string', 42, true, [], [ok()]])('a body that is not an object (%j) → pointer ""', (b) => {
    const err = malformed(b);
    expect(err.status).toBe(400);
    expect(err.details).toEqual([expect.objectContaining({ code: 'REQUEST_MALFORMED', pointer: '' })]);
  });

  it.each(['rightsContexts', 'processingContexts', 'requests'] as const)('missing top-level %s → pointer /%s', (field) => {
    const req: Record<string, unknown> = ok();
    delete req[field];
    expect(malformed(req).details).toEqual([expect.objectContaining({ pointer: `/${field}` })]);
  });

  it.each([
    ['request guid', (b: Loose) => delete b.requests[0].guid, '/requests/0/guid'],
    ['request rightsContext', (b: Loose) => delete b.requests[0].rightsContext, '/requests/0/rightsContext'],
    ['request processingContext', (b: Loose) => delete b.requests[0].processingContext, '/requests/0/processingContext'],
    ['request instances', (b: Loose) => delete b.requests[0].instances, '/requests/0/instances'],
    ['instance className', (b: Loose) => delete b.requests[0].instances[0].className, '/requests/0/instances/0/className'],
    ['instance propertyName', (b: Loose) => delete b.requests[0].instances[0].propertyName, '/requests/0/instances/0/propertyName'],
    ['instance value', (b: Loose) => delete b.requests[0].instances[0].value, '/requests/0/instances/0/value'],
    ['context guid', (b: Loose) => delete b.rightsContexts[0].guid, '/rightsContexts/0/guid'],
    ['context evidences', (b: Loose) => delete b.processingContexts[0].evidences, '/processingContexts/0/evidences'],
    ['evidence name', (b: Loose) => delete b.rightsContexts[0].evidences[0].name, '/rightsContexts/0/evidences/0/name'],
    ['evidence value', (b: Loose) => delete b.processingContexts[0].evidences[0].value, '/processingContexts/0/evidences/0/value'],
  ])('missing %s → its pointer', (_what, mutate, pointer) => {
    const req: Loose = ok();
    mutate(req);
    expect(malformed(req).details).toEqual([expect.objectContaining({ code: 'REQUEST_MALFORMED', pointer })]);
  });

  it.each([
    [
      'instance value as number',
      (b: Loose) => {
        b.requests[0].instances[0].value = 4111111111111111;
      },
      '/requests/0/instances/0/value',
    ],
    [
      'instance value as null',
      (b: Loose) => {
        b.requests[0].instances[0].value = null;
      },
      '/requests/0/instances/0/value',
    ],
    [
      'instance value as object',
      (b: Loose) => {
        b.requests[0].instances[0].value = { v: 'x' };
      },
      '/requests/0/instances/0/value',
    ],
    [
      'className as number',
      (b: Loose) => {
        b.requests[0].instances[0].className = 1;
      },
      '/requests/0/instances/0/className',
    ],
    [
      'instances as object',
      (b: Loose) => {
        b.requests[0].instances = {};
      },
      '/requests/0/instances',
    ],
    [
      'instance as string',
      (b: Loose) => {
        b.requests[0].instances[0] = 'x';
      },
      '/requests/0/instances/0',
    ],
    [
      'request guid as number',
      (b: Loose) => {
        b.requests[0].guid = 7;
      },
      '/requests/0/guid',
    ],
    [
      'requests as object',
      (b: Loose) => {
        b.requests = {};
      },
      '/requests',
    ],
    [
      'evidences as object',
      (b: Loose) => {
        b.rightsContexts[0].evidences = { Role: 'fraud' };
      },
      '/rightsContexts/0/evidences',
    ],
    [
      'evidence value as number',
      (b: Loose) => {
        b.rightsContexts[0].evidences[0].value = 1;
      },
      '/rightsContexts/0/evidences/0/value',
    ],
    [
      'evidence name empty',
      (b: Loose) => {
        b.processingContexts[0].evidences[0].name = '';
      },
      '/processingContexts/0/evidences/0/name',
    ],
  ])('wrong type: %s → its pointer', (_what, mutate, pointer) => {
    const req = ok() as Loose;
    mutate(req);
    expect(malformed(req).details).toEqual([expect.objectContaining({ code: 'REQUEST_MALFORMED', pointer })]);
  });

  it.each([
    [
      'top level',
      (b: Loose) => {
        b.extra = 1;
      },
      '',
    ],
    [
      'a request',
      (b: Loose) => {
        b.requests[0].priority = 'high';
      },
      '/requests/0',
    ],
    [
      'an instance',
      (b: Loose) => {
        b.requests[0].instances[0].format = 'x';
      },
      '/requests/0/instances/0',
    ],
    [
      'a context',
      (b: Loose) => {
        b.rightsContexts[0].name = 'x';
      },
      '/rightsContexts/0',
    ],
    [
      'an evidence',
      (b: Loose) => {
        b.processingContexts[0].evidences[0].weight = 1;
      },
      '/processingContexts/0/evidences/0',
    ],
  ])('an extra field in %s → REQUEST_MALFORMED at that object, naming the field', (_where, mutate, pointer) => {
    const req = ok() as Loose;
    mutate(req);
    const err = malformed(req);
    expect(err.details).toEqual([expect.objectContaining({ pointer })]);
    expect(err.details[0]!.message).toMatch(/extra|priority|format|name|weight/);
  });

  it('does not echo unknown field names that look like values (a client putting data into keys)', () => {
    const req = ok() as Loose;
    req.requests[0].instances[0]['alice.secret@example.com'] = 'x';
    req.requests[0].instances[0]['4111111111111111'] = 'y';
    req.requests[0].instances[0].format = 'z';
    const err = malformed(req);
    const json = JSON.stringify(err);
    expect(json).not.toContain('alice.secret@example.com');
    expect(json).not.toContain('4111111111111111');
    expect(err.details[0]!.message).toContain('"format"');
    expect(err.details[0]!.message).toContain('2 whose names are not shown');
  });

  it('field names are case-sensitive: Requests is not requests', () => {
    const req = ok() as unknown as Record<string, unknown>;
    req.Requests = req.requests;
    delete req.requests;
    expect(
      malformed(req)
        .details.map((d) => d.pointer)
        .sort(),
    ).toEqual(['', '/requests']);
  });

  it('lists every shape problem of the body, each with a pointer, and none of the values', () => {
    const req = ok() as Loose;
    req.requests[0].instances.push({ className: 'Customer', propertyName: 'email', value: 987654321012 });
    req.requests[0].instances.push({ className: 'Customer', value: 'secret-value-no-property' });
    delete req.processingContexts;
    const err = malformed(req);
    expect(err.details.map((d) => d.pointer).sort()).toEqual(['/processingContexts', '/requests/0/instances/1/value', '/requests/0/instances/2/propertyName']);
    expect(err.message).toContain('3 problems');
    const text = JSON.stringify(err);
    expect(text).not.toContain('987654321012');
    expect(text).not.toContain('secret-value-no-property');
    expect(text).not.toContain(SAMPLE.email);
  });

  it('shape is checked before identifiers: a malformed body with bad guids reports only the shape', () => {
    const req = ok() as Loose;
    req.requests[0].guid = 'not-a-uuid';
    req.requests[0].instances[0].value = 5;
    expect(malformed(req).details).toHaveLength(1);
  });
});

describe('Engine: evidences and processing contexts', () => {
  const { engine } = engineFixture();
  const contexts = engineFixture(fixtureText('contexts.yaml'));
  const agentA = [
    { name: 'Role', value: 'agent' },
    { name: 'Tenant', value: 'a' },
  ];

  it('an evidence name no configured processing context uses → EVIDENCE_UNKNOWN at its name', () => {
    const req = body({
      roles: ['fraud'],
      processing: [
        { name: 'Action', value: 'Protect' },
        { name: 'Acton', value: 'Protect' },
      ],
      instances: [['email', SAMPLE.email]],
    });
    const err = veilErrorOf(() => engine.transform(req, fraud), 'EVIDENCE_UNKNOWN');
    expect(err.status).toBe(400);
    expect(err.details).toEqual([expect.objectContaining({ pointer: '/processingContexts/0/evidences/1/name' })]);
    expect(err.details[0]!.message).toContain('Acton');
  });

  it('an evidence name no configured rights context uses → EVIDENCE_UNKNOWN (names are case-sensitive)', () => {
    const req = body({ rights: [{ name: 'role', value: 'fraud' }], action: 'Protect', instances: [['email', SAMPLE.email]] });
    const err = veilErrorOf(() => engine.transform(req, fraud), 'EVIDENCE_UNKNOWN');
    expect(err.details).toEqual([expect.objectContaining({ pointer: '/rightsContexts/0/evidences/0/name' })]);
  });

  it('Action is a processing evidence, not a rights evidence, in the example', () => {
    const req = body({
      rights: [
        { name: 'Role', value: 'fraud' },
        { name: 'Action', value: 'Protect' },
      ],
      action: 'Protect',
      instances: [['email', SAMPLE.email]],
    });
    const err = veilErrorOf(() => engine.transform(req, fraud), 'EVIDENCE_UNKNOWN');
    expect(err.details).toEqual([expect.objectContaining({ pointer: '/rightsContexts/0/evidences/1/name' })]);
  });

  it('EVIDENCE_UNKNOWN keeps a long evidence name out of the message beyond 64 characters', () => {
    const long = `X${'y'.repeat(200)}`;
    const req = body({ roles: ['fraud'], processing: [{ name: long, value: 'v' }], instances: [['email', SAMPLE.email]] });
    const err = veilErrorOf(() => engine.transform(req, fraud), 'EVIDENCE_UNKNOWN');
    expect(JSON.stringify(err)).not.toContain(long);
  });

  it.each([
    ['an unknown action', [{ name: 'Action', value: 'Shred' }]],
    ['a wrongly cased action', [{ name: 'Action', value: 'protect' }]],
    ['no evidences', []],
  ])('a processing context with %s → PROCESSING_CONTEXT_UNMATCHED', (_what, evidences) => {
    const req = body({ roles: ['fraud'], processing: evidences, instances: [['email', SAMPLE.email]] });
    const err = veilErrorOf(() => engine.transform(req, fraud), 'PROCESSING_CONTEXT_UNMATCHED');
    expect(err.status).toBe(400);
    expect(err.details).toEqual([expect.objectContaining({ pointer: '/processingContexts/0/evidences' })]);
  });

  it('two configured processing contexts with the same number of evidences both matching → PROCESSING_CONTEXT_AMBIGUOUS naming both', () => {
    const req = body({
      rights: agentA,
      processing: [
        { name: 'Action', value: 'Protect' },
        { name: 'Channel', value: 'web' },
      ],
      className: 'Account',
      instances: [['owner', 'Some Owner']],
    });
    const err = veilErrorOf(() => contexts.engine.transform(req, identity('agent')), 'PROCESSING_CONTEXT_AMBIGUOUS');
    expect(err.status).toBe(400);
    expect(err.details).toEqual([expect.objectContaining({ pointer: '/processingContexts/0/evidences' })]);
    expect(err.details[0]!.message).toContain('protect');
    expect(err.details[0]!.message).toContain('web');
  });

  it('the most specific matching processing context wins', () => {
    const owner = 'Hieronymus Owner';
    const res = contexts.engine.transform(
      body(
        // {Channel: web} → the `web` context: Protect
        {
          rights: [...agentA, { name: 'Role', value: 'masker' }],
          processing: [{ name: 'Channel', value: 'web' }],
          className: 'Account',
          instances: [['owner', owner]],
        },
        // {Channel: web, Purpose: display} matches `web` (1) and `web-display` (2): Mask
        {
          rights: [...agentA, { name: 'Role', value: 'masker' }],
          processing: [
            { name: 'Channel', value: 'web' },
            { name: 'Purpose', value: 'display' },
          ],
          className: 'Account',
          instances: [['owner', owner]],
        },
        // plus Action=Protect: `protect` and `web` have 1 evidence, `web-display` 2: still Mask
        {
          rights: [...agentA, { name: 'Role', value: 'masker' }],
          processing: [
            { name: 'Action', value: 'Protect' },
            { name: 'Channel', value: 'web' },
            { name: 'Purpose', value: 'display' },
          ],
          className: 'Account',
          instances: [['owner', owner]],
        },
      ),
      identity('agent', 'masker'),
    );
    const protectedOwner = valuesOf(res, 0)[0]!;
    expect(protectedOwner).toMatch(BASE64URL);
    expect(valuesOf(res, 1)).toEqual(['**************er']);
    expect(valuesOf(res, 2)).toEqual(['**************er']);
    const back = contexts.engine.transform(
      body({ rights: agentA, action: 'Unprotect', className: 'Account', instances: [['owner', protectedOwner]] }),
      identity('agent'),
    );
    expect(valuesOf(back)).toEqual([owner]);
  });

  it('extra known evidences in the body do not stop a configured context from matching', () => {
    const res = contexts.engine.transform(
      body({
        rights: agentA,
        processing: [
          { name: 'Action', value: 'Unprotect' },
          { name: 'Purpose', value: 'display' },
        ],
        className: 'Account',
        instances: [],
      }),
      identity('agent'),
    );
    expect(res.responses).toHaveLength(1);
  });

  it('reports problems of every referenced context at once', () => {
    const req = body(requestSpec('fraud', 'Shred'), { roles: ['fraud'], processing: [{ name: 'Bogus', value: 'x' }], instances: [] });
    const err = veilErrorOf(() => engine.transform(req, fraud), 'PROCESSING_CONTEXT_UNMATCHED');
    expect(err.details.map((d) => [d.code, d.pointer])).toEqual([
      ['PROCESSING_CONTEXT_UNMATCHED', '/processingContexts/0/evidences'],
      ['EVIDENCE_UNKNOWN', '/processingContexts/1/evidences/0/name'],
    ]);
  });
});

describe('Engine: rights contexts and roles', () => {
  const { engine } = engineFixture();
  const contexts = engineFixture(fixtureText('contexts.yaml'));

  it('a Role evidence the identity does not hold → ROLE_NOT_HELD (403), even though the body claims it', () => {
    const req = transformRequest('fraud', 'Protect', ['email', SAMPLE.email]);
    const err = veilErrorOf(() => engine.transform(req, identity('support')), 'ROLE_NOT_HELD');
    expect(err.status).toBe(403);
    expect(err.details).toEqual([expect.objectContaining({ code: 'ROLE_NOT_HELD', pointer: '/rightsContexts/0/evidences/0/value' })]);
  });

  it('ROLE_NOT_HELD when one of several claimed roles is not held, and with no roles at all', () => {
    const req = transformRequest(['ingest', 'fraud'], 'Protect', ['email', SAMPLE.email]);
    const err = veilErrorOf(() => engine.transform(req, identity('ingest')), 'ROLE_NOT_HELD');
    expect(err.details).toEqual([expect.objectContaining({ pointer: '/rightsContexts/0/evidences/1/value' })]);
    veilErrorOf(() => engine.transform(req, identity()), 'ROLE_NOT_HELD');
  });

  it('role names are case-sensitive: holding "Fraud" is not holding "fraud"', () => {
    const req = transformRequest('fraud', 'Protect', ['email', SAMPLE.email]);
    veilErrorOf(() => engine.transform(req, identity('Fraud')), 'ROLE_NOT_HELD');
  });

  it('a held role no configured rights context names → RIGHTS_CONTEXT_UNMATCHED (403)', () => {
    const req = transformRequest('auditor', 'Protect', ['email', SAMPLE.email]);
    const err = veilErrorOf(() => engine.transform(req, identity('auditor')), 'RIGHTS_CONTEXT_UNMATCHED');
    expect(err.status).toBe(403);
    expect(err.details).toEqual([expect.objectContaining({ pointer: '/rightsContexts/0/evidences' })]);
  });

  it('a rights context with no evidences matches nothing → RIGHTS_CONTEXT_UNMATCHED', () => {
    const req = body({ rights: [], action: 'Protect', instances: [['email', SAMPLE.email]] });
    veilErrorOf(() => engine.transform(req, identity('fraud', 'ingest', 'support')), 'RIGHTS_CONTEXT_UNMATCHED');
  });

  it('a configured rights context with several evidences matches only when all are present', () => {
    const protectOwner = (rights: { name: string; value: string }[]) => () =>
      contexts.engine.transform(body({ rights, action: 'Protect', className: 'Account', instances: [['owner', 'O. Wner']] }), identity('agent'));
    veilErrorOf(protectOwner([{ name: 'Role', value: 'agent' }]), 'RIGHTS_CONTEXT_UNMATCHED');
    veilErrorOf(
      protectOwner([
        { name: 'Role', value: 'agent' },
        { name: 'Tenant', value: 'b' },
      ]),
      'RIGHTS_CONTEXT_UNMATCHED',
    );
    veilErrorOf(protectOwner([{ name: 'Tenant', value: 'a' }]), 'RIGHTS_CONTEXT_UNMATCHED');
    expect(
      protectOwner([
        { name: 'Tenant', value: 'a' },
        { name: 'Role', value: 'agent' },
      ])().responses,
    ).toHaveLength(1);
  });

  it('several matching rights contexts add up their grants', () => {
    const both = identity('ingest', 'support');
    const protectedValues = engine.transform(transformRequest('fraud', 'Protect', ['email', SAMPLE.email]), fraud);
    const res = engine.transform(
      body(
        // Pseudonymize comes from ingest, Unprotect on email and Mask on cardNumber from support
        requestSpec(['ingest', 'support'], 'Pseudonymize', ['name', SAMPLE.name]),
        requestSpec(['ingest', 'support'], 'Unprotect', ['email', valuesOf(protectedValues)[0]!]),
        requestSpec(['ingest', 'support'], 'Mask', ['cardNumber', SAMPLE.cardNumber]),
        requestSpec(['ingest', 'support'], 'Protect', ['nationalId', SAMPLE.nationalId], ['email', SAMPLE.email]),
      ),
      both,
    );
    expect(valuesOf(res, 1)).toEqual([SAMPLE.email]);
    expect(valuesOf(res, 2)).toEqual(['****-****-****-2261']);
    // each alone lacks one of these grants
    veilErrorOf(() => engine.transform(transformRequest('ingest', 'Mask', ['cardNumber', SAMPLE.cardNumber]), both), 'ACTION_NOT_GRANTED');
    veilErrorOf(() => engine.transform(transformRequest('support', 'Pseudonymize', ['name', SAMPLE.name]), both), 'ACTION_NOT_GRANTED');
  });

  it('Engine.plan lists the matched rights contexts, the processing context and whether the call reveals cleartext', () => {
    const protectedEmail = valuesOf(engine.transform(transformRequest('fraud', 'Protect', ['email', SAMPLE.email]), fraud))[0]!;
    const plan = engine.plan(
      body(requestSpec(['ingest', 'support'], 'Protect', ['email', SAMPLE.email]), requestSpec('support', 'Unprotect', ['email', protectedEmail])),
      identity('ingest', 'support'),
    );
    expect(plan.requests.map((r) => [r.action, r.processingContext, [...r.rightsContexts].sort(), r.reveals])).toEqual([
      ['Protect', 'protect', ['ingest', 'support'], false],
      ['Unprotect', 'unprotect', ['support'], true],
    ]);
    expect(engine.execute(plan).responses[1]!.instances[0]!.value).toBe(SAMPLE.email);
  });
});

describe('Engine: fields and actions', () => {
  const { engine } = engineFixture();
  const auditorText = EXAMPLE_CONFIG_TEXT.replace(
    /^rightsContexts:\n/m,
    "rightsContexts:\n  auditor:\n    evidences: { Role: auditor }\n    grants:\n      - { actions: [Mask, Unprotect], fields: ['*'] }\n",
  );
  const auditor = engineFixture(auditorText);

  it('a property of a granted class that is not configured → FIELD_UNKNOWN (422) with request, instance, pointer', () => {
    const req = transformRequest('fraud', 'Protect', ['email', SAMPLE.email], ['shoeSize', '44']);
    const err = veilErrorOf(() => engine.transform(req, fraud), 'FIELD_UNKNOWN');
    expect(err.status).toBe(422);
    expect(err.details).toEqual([
      {
        code: 'FIELD_UNKNOWN',
        pointer: '/requests/0/instances/1',
        request: req.requests[0]!.guid,
        instance: 1,
        className: 'Customer',
        propertyName: 'shoeSize',
        message: expect.stringContaining('Customer.shoeSize'),
      },
    ]);
  });

  it('a class nobody is granted → ACTION_NOT_GRANTED (grants are checked before field configuration)', () => {
    const req = transformRequest('fraud', 'Protect', { className: 'Order', propertyName: 'id', value: '1' });
    veilErrorOf(() => engine.transform(req, fraud), 'ACTION_NOT_GRANTED');
  });

  it('with a grant on *, an unknown class → FIELD_UNKNOWN; names are case-sensitive', () => {
    const req = transformRequest(
      'auditor',
      'Mask',
      { className: 'Order', propertyName: 'id', value: '1' },
      { className: 'customer', propertyName: 'cardNumber', value: '1' },
      ['CardNumber', '1'],
    );
    const err = veilErrorOf(() => auditor.engine.transform(req, identity('auditor')), 'FIELD_UNKNOWN');
    expect(err.details.map((d) => d.instance)).toEqual([0, 1, 2]);
  });

  it('Mask on Customer.email (granted, no Mask sequence) → ACTION_NOT_CONFIGURED (422)', () => {
    const req = transformRequest('auditor', 'Mask', ['cardNumber', SAMPLE.cardNumber], ['email', SAMPLE.email]);
    const err = veilErrorOf(() => auditor.engine.transform(req, identity('auditor')), 'ACTION_NOT_CONFIGURED');
    expect(err.status).toBe(422);
    expect(err.details).toEqual([
      expect.objectContaining({
        code: 'ACTION_NOT_CONFIGURED',
        pointer: '/requests/0/instances/1',
        instance: 1,
        request: req.requests[0]!.guid,
        className: 'Customer',
        propertyName: 'email',
      }),
    ]);
  });

  it('Pseudonymize on Customer.email for ingest (granted on Customer.*) → ACTION_NOT_CONFIGURED', () => {
    veilErrorOf(() => engine.transform(transformRequest('ingest', 'Pseudonymize', ['email', SAMPLE.email]), identity('ingest')), 'ACTION_NOT_CONFIGURED');
  });

  it('the irreversible segmentKey (unprotect: none) cannot be unprotected, even with Unprotect granted', () => {
    const prot = valuesOf(engine.transform(transformRequest('fraud', 'Protect', ['segmentKey', SAMPLE.segmentKey]), fraud))[0]!;
    const err = veilErrorOf(() => engine.transform(transformRequest('fraud', 'Unprotect', ['segmentKey', prot]), fraud), 'ACTION_NOT_CONFIGURED');
    expect(err.details).toEqual([expect.objectContaining({ propertyName: 'segmentKey', pointer: '/requests/0/instances/0' })]);
    expect(JSON.stringify(err)).not.toContain(prot);
  });

  it('masked card numbers cannot be unmasked: Unprotect of a masked value fails as a value, not as a reveal', () => {
    const masked = valuesOf(auditor.engine.transform(transformRequest('auditor', 'Mask', ['cardNumber', SAMPLE.cardNumber]), identity('auditor')))[0]!;
    expect(masked).toBe('****-****-****-2261');
    // Unprotect of cardNumber runs the ff1 inverse: a masked value has too few digits
    veilErrorOf(() => auditor.engine.transform(transformRequest('auditor', 'Unprotect', ['cardNumber', masked]), identity('auditor')), 'VALUE_TOO_SHORT');
  });
});

describe('Engine: value errors (422)', () => {
  const { engine } = engineFixture();
  const protect = (instances: [string, string][]) => engine.transform(transformRequest('fraud', 'Protect', ...instances), fraud);
  const unprotect = (instances: [string, string][]) => () => engine.transform(transformRequest('fraud', 'Unprotect', ...instances), fraud);

  it.each([
    ['cardNumber', '4111-1111-1111'],
    ['cardNumber', '4111-1111-111-1'],
    ['cardNumber', ''],
    ['nationalId', 'AB1'],
    ['nationalId', 'qq12c'], // lower case is outside alnum-upper: kept in place, 2 numerals left
  ])('ff1 %s value %j is too short → VALUE_TOO_SHORT with pointer to the value', (property, value) => {
    const req = transformRequest('fraud', 'Protect', [property, value]);
    const err = veilErrorOf(() => engine.transform(req, fraud), 'VALUE_TOO_SHORT');
    expect(err.details).toEqual([
      expect.objectContaining({
        code: 'VALUE_TOO_SHORT',
        pointer: '/requests/0/instances/0/value',
        instance: 0,
        request: req.requests[0]!.guid,
        propertyName: property,
      }),
    ]);
  });

  it('the shortest accepted card number is 16 digits (6 kept + 6 encrypted + 4 kept)', () => {
    expect(valuesOf(protect([['cardNumber', '4111111111111111']]))[0]).toMatch(/^411111\d{6}1111$/);
    veilErrorOf(() => protect([['cardNumber', '411111111111111']]), 'VALUE_TOO_SHORT');
  });

  it('a tampered aes-siv value (email) → PROTECTED_VALUE_INVALID', () => {
    const prot = valuesOf(protect([['email', SAMPLE.email]]))[0]!;
    const err = veilErrorOf(unprotect([['email', tamper(prot)]]), 'PROTECTED_VALUE_INVALID');
    expect(err.details).toEqual([expect.objectContaining({ pointer: '/requests/0/instances/0/value', propertyName: 'email' })]);
  });

  it('a tampered aes-gcm value (name) → PROTECTED_VALUE_INVALID', () => {
    const prot = valuesOf(protect([['name', SAMPLE.name]]))[0]!;
    veilErrorOf(unprotect([['name', tamper(prot)]]), 'PROTECTED_VALUE_INVALID');
  });

  it('every truncation of a protected email fails', () => {
    const prot = valuesOf(protect([['email', SAMPLE.email]]))[0]!;
    for (let n = 0; n < prot.length; n++) {
      const err = veilErrorOf(unprotect([['email', prot.slice(0, n)]]), 'PROTECTED_VALUE_INVALID');
      expect(err.details).toHaveLength(1);
    }
  });

  it('a value protected for another field or by another transformer → PROTECTED_VALUE_INVALID', () => {
    const [email, name] = valuesOf(
      protect([
        ['email', SAMPLE.email],
        ['name', SAMPLE.name],
      ]),
    );
    veilErrorOf(unprotect([['name', email!]]), 'PROTECTED_VALUE_INVALID');
    veilErrorOf(unprotect([['email', name!]]), 'PROTECTED_VALUE_INVALID');
    // same sequence and key, other field: the binding label is authenticated
    const ctx = engineFixture(fixtureText('contexts.yaml'));
    const agentA = [
      { name: 'Role', value: 'agent' },
      { name: 'Tenant', value: 'a' },
    ];
    const owner = valuesOf(
      ctx.engine.transform(body({ rights: agentA, action: 'Protect', className: 'Account', instances: [['owner', 'same value']] }), identity('agent')),
    )[0]!;
    veilErrorOf(
      () => ctx.engine.transform(body({ rights: agentA, action: 'Unprotect', className: 'Account', instances: [['iban', owner]] }), identity('agent')),
      'PROTECTED_VALUE_INVALID',
    );
  });

  it.each(['', 'not base64!', 'plain@example.org', '====', 'A'])('unprotecting %j as email → PROTECTED_VALUE_INVALID', (value) => {
    veilErrorOf(unprotect([['email', value]]), 'PROTECTED_VALUE_INVALID');
  });

  it('a protected value naming a key version the keystore lacks → KEY_VERSION_UNKNOWN', () => {
    const [email, name] = valuesOf(
      protect([
        ['email', SAMPLE.email],
        ['name', SAMPLE.name],
      ]),
    );
    const err = veilErrorOf(
      unprotect([
        ['email', withKeyVersion(email!, 9)],
        ['name', withKeyVersion(name!, 2)],
      ]),
      'KEY_VERSION_UNKNOWN',
    );
    expect(err.details.map((d) => [d.code, d.instance])).toEqual([
      ['KEY_VERSION_UNKNOWN', 0],
      ['KEY_VERSION_UNKNOWN', 1],
    ]);
  });

  it('a lone surrogate cannot be protected → VALUE_NOT_IN_ALPHABET', () => {
    veilErrorOf(() => protect([['email', 'abc\uD800def']]), 'VALUE_NOT_IN_ALPHABET');
    veilErrorOf(() => protect([['name', '\uDFFF']]), 'VALUE_NOT_IN_ALPHABET');
  });

  it('missing keys → KEY_UNAVAILABLE (503, retriable)', () => {
    const bare = new Engine({ config: compileOrFail(EXAMPLE_CONFIG_TEXT), keys: new MemoryKeyProvider() });
    for (const property of ['email', 'name', 'cardNumber', 'segmentKey']) {
      const err = veilErrorOf(
        () => bare.transform(transformRequest('fraud', 'Protect', [property, SAMPLE[property as keyof typeof SAMPLE]]), fraud),
        'KEY_UNAVAILABLE',
      );
      expect(err.status).toBe(503);
      expect(err.retriable).toBe(true);
    }
  });
});

describe('Engine: atomicity and error documents', () => {
  const { engine } = engineFixture();
  const both = identity('fraud', 'support');

  /** Every value a call sent, and what was derived from them, must stay out of the error. */
  function expectNoValues(err: VeilError, values: readonly string[]): void {
    const texts = [JSON.stringify(err), err.message, String(err), err.stack ?? '', JSON.stringify(err.details)];
    for (const v of values) for (const t of texts) expect(t).not.toContain(v);
  }

  function expectCatalog(err: VeilError): void {
    // the engine raises its own codes only (src/engine/errors.ts); each layer keeps its own
    expect(Object.keys(ENGINE_ERRORS)).toContain(err.code);
    expect(err.status).toBe(ENGINE_ERRORS[err.code as EngineErrorCode].status);
    expect(err.retriable).toBe(ENGINE_ERRORS[err.code as EngineErrorCode].retriable);
    for (const d of err.details) expect(ENGINE_ERRORS[d.code as EngineErrorCode].status).toBe(err.status);
    expect(err.toJSON()).toEqual({ code: err.code, message: err.message, retriable: err.retriable, details: err.details });
  }

  it('several bad values across several requests: the call fails as a whole and lists every offender', () => {
    const okEmail = 'wilhelmina.okvalue-93@example.net';
    const revealedEmail = 'barnabas.revealed-17@example.net';
    const shortCard = '5500-0000-0371';
    const shortId = 'QZ7';
    const protectedEmail = valuesOf(engine.transform(transformRequest('fraud', 'Protect', ['email', revealedEmail]), fraud))[0]!;
    const tamperedName = tamper(valuesOf(engine.transform(transformRequest('fraud', 'Protect', ['name', 'Cornelius Tamperfield']), fraud))[0]!);
    const req = body(
      requestSpec('fraud', 'Protect', ['email', okEmail], ['cardNumber', shortCard], ['nationalId', shortId]),
      requestSpec('fraud', 'Unprotect', ['email', protectedEmail], ['name', tamperedName]),
    );
    const err = veilErrorOf(() => engine.transform(req, both), 'VALUE_TOO_SHORT');
    expect(err.status).toBe(422);
    expect(err.details).toEqual([
      expect.objectContaining({
        code: 'VALUE_TOO_SHORT',
        request: req.requests[0]!.guid,
        instance: 1,
        pointer: '/requests/0/instances/1/value',
        className: 'Customer',
        propertyName: 'cardNumber',
      }),
      expect.objectContaining({
        code: 'VALUE_TOO_SHORT',
        request: req.requests[0]!.guid,
        instance: 2,
        pointer: '/requests/0/instances/2/value',
        propertyName: 'nationalId',
      }),
      expect.objectContaining({
        code: 'PROTECTED_VALUE_INVALID',
        request: req.requests[1]!.guid,
        instance: 1,
        pointer: '/requests/1/instances/1/value',
        propertyName: 'name',
      }),
    ]);
    expect(err.message).toContain('3 problems');
    expectCatalog(err);
    expectNoValues(err, [okEmail, revealedEmail, protectedEmail, shortCard, digitsOf(shortCard), shortId, tamperedName, 'Cornelius', 'Tamperfield']);
  });

  it('several unauthorized instances across requests: every one is listed (403), none of the values', () => {
    const card = '6011-0009-9013-9424';
    const idValue = 'ZX987654Q';
    const req = body(
      requestSpec('support', 'Protect', ['email', SAMPLE.email], ['cardNumber', card]),
      requestSpec('support', 'Mask', ['cardNumber', card], ['nationalId', idValue]),
      requestSpec('support', 'Unprotect', ['name', 'unauthorized-name-value']),
    );
    const err = veilErrorOf(() => engine.transform(req, identity('support')), 'ACTION_NOT_GRANTED');
    expect(err.details.map((d) => [d.request, d.instance, d.pointer])).toEqual([
      [req.requests[0]!.guid, 1, '/requests/0/instances/1'],
      [req.requests[1]!.guid, 1, '/requests/1/instances/1'],
      [req.requests[2]!.guid, 0, '/requests/2/instances/0'],
    ]);
    expectCatalog(err);
    expectNoValues(err, [card, digitsOf(card), idValue, 'unauthorized-name-value', SAMPLE.email]);
  });

  it('stages: an authorization problem in one request hides field and value problems in others', () => {
    const req = body(requestSpec('fraud', 'Protect', ['cardNumber', '12'], ['shoeSize', '44']), requestSpec('support', 'Unprotect', ['cardNumber', 'x']));
    const err = veilErrorOf(() => engine.transform(req, both), 'ACTION_NOT_GRANTED');
    expect(err.details).toEqual([expect.objectContaining({ request: req.requests[1]!.guid, instance: 0 })]);
  });

  it('stages: a field problem hides value problems; every field problem is listed', () => {
    const req = body(
      requestSpec('fraud', 'Protect', ['cardNumber', '12'], ['shoeSize', '44']),
      requestSpec('fraud', 'Unprotect', ['segmentKey', 'x'], ['email', 'garbage']),
    );
    const err = veilErrorOf(() => engine.transform(req, fraud), 'FIELD_UNKNOWN');
    expect(err.details.map((d) => [d.code, d.pointer])).toEqual([
      ['FIELD_UNKNOWN', '/requests/0/instances/1'],
      ['ACTION_NOT_CONFIGURED', '/requests/1/instances/0'],
    ]);
    expect(err.status).toBe(422);
  });

  it('stages: identifier problems hide context problems; context problems hide grants', () => {
    const req = transformRequest('nobody', 'Shred', ['email', 'x']);
    req.requests[0]!.guid = 'nope';
    veilErrorOf(() => engine.transform(req, fraud), 'GUID_INVALID');
    req.requests[0]!.guid = randomUUID();
    // processing (400) problems come before rights (403) problems
    veilErrorOf(() => engine.transform(req, fraud), 'PROCESSING_CONTEXT_UNMATCHED');
    req.processingContexts[0]!.evidences = [{ name: 'Action', value: 'Unprotect' }];
    veilErrorOf(() => engine.transform(req, fraud), 'ROLE_NOT_HELD');
  });

  it('a value error in one request means no response for the good requests either', () => {
    const good = transformRequest('fraud', 'Protect', ['email', SAMPLE.email]);
    const bad = transformRequest('fraud', 'Protect', ['cardNumber', '1']);
    const req: TransformRequest = {
      rightsContexts: [...good.rightsContexts, ...bad.rightsContexts],
      processingContexts: [...good.processingContexts, ...bad.processingContexts],
      requests: [...good.requests, ...bad.requests],
    };
    let result: unknown;
    try {
      result = engine.transform(req, fraud);
    } catch (e) {
      expect(e).toBeInstanceOf(VeilError);
      expect((e as VeilError).details).toHaveLength(1);
      return;
    }
    throw new Error(`expected the call to fail, got ${JSON.stringify(result)}`);
  });

  it('details carry only code, pointer, message, request, instance, className, propertyName', () => {
    const req = transformRequest('fraud', 'Protect', ['cardNumber', '1'], ['nationalId', '2']);
    const err = veilErrorOf(() => engine.transform(req, fraud), 'VALUE_TOO_SHORT');
    const allowed: (keyof ErrorDetail)[] = ['code', 'pointer', 'message', 'request', 'instance', 'className', 'propertyName'];
    for (const d of err.details) for (const k of Object.keys(d)) expect(allowed).toContain(k);
  });

  it('every error code the engine raised in this file has the catalog status and retriable flag', () => {
    // a compact sweep: one call per stage, each checked against ENGINE_ERRORS
    const calls: [EngineErrorCode, () => unknown][] = [
      ['REQUEST_MALFORMED', () => engine.transform({}, fraud)],
      [
        'GUID_INVALID',
        () =>
          engine.transform(
            { ...transformRequest('fraud', 'Protect'), requests: [{ guid: 'x', rightsContext: 'y', processingContext: 'z', instances: [] }] },
            fraud,
          ),
      ],
      ['ROLE_NOT_HELD', () => engine.transform(transformRequest('fraud', 'Protect'), identity())],
      ['VALUE_TOO_SHORT', () => engine.transform(transformRequest('fraud', 'Protect', ['cardNumber', '1']), fraud)],
    ];
    for (const [code, call] of calls) expectCatalog(veilErrorOf(call, code));
  });
});
