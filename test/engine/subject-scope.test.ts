import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { compileConfigText, JS_PRIMITIVES, SecretKey, type Primitives, type SubjectEntry, type SubjectKeyring } from '../../src/engine/index.ts';
import { nativePrimitives } from '../../src/native/index.ts';
import { body, engineFixture, identity, tamper, valuesOf, veilErrorOf, withKeyVersion } from '../helpers/engine-fixture.ts';

/** Keys scoped to the data subject (issue 29): each subject's values under that subject's own key. */
const CONFIG = (returning = 'new-key', extraKeys = '') => `
version: 1
subjects: { returning: ${returning} }
keys:
  person-siv: { type: aes-siv, scope: subject }
  person-gcm: { type: aes-gcm, scope: subject }
  person-mac: { type: hmac-sha256, scope: subject }
  shared-siv: { type: aes-siv }
${extraKeys}
sequences:
  email: { steps: [{ type: aes-siv, key: person-siv }] }
  name: { steps: [{ type: aes-gcm, key: person-gcm }] }
  token: { steps: [{ type: hmac-sha256, key: person-mac, outputBytes: 16 }] }
  city: { steps: [{ type: aes-siv, key: shared-siv }] }
classes:
  Customer:
    properties:
      email: { protect: email }
      name: { protect: name }
      token: { protect: token, unprotect: none }
      city: { protect: city }
rightsContexts:
  all:
    evidences: { Role: agent }
    grants: [{ actions: [Protect, Unprotect], fields: ['*'] }]
processingContexts:
  protect: { evidences: { Action: Protect } }
  unprotect: { evidences: { Action: Unprotect } }
`;

const live = (generation = 1): SubjectEntry => ({ generation, key: SecretKey.fromBytes(randomBytes(32)) });
const erased = (generation = 1): SubjectEntry => ({ erased: true, generation });
const who = identity('agent');

function call(action: string, subject: string | undefined, instances: [string, string][], extra: { name: string; value: string }[] = []) {
  const processing = [{ name: 'Action', value: action }, ...(subject === undefined ? [] : [{ name: 'Subject', value: subject }]), ...extra];
  return body({ roles: ['agent'], processing, instances });
}

describe('engine: keys scoped to the data subject', () => {
  const { engine } = engineFixture(CONFIG());

  function run(action: string, subject: string | undefined, ring: SubjectKeyring | undefined, instances: [string, string][]): string[] {
    return valuesOf(engine.execute(engine.plan(call(action, subject, instances), who), ring));
  }

  it("protects under the subject's key: round-trips for that subject; another subject's key cannot open it", () => {
    const ring = new Map([
      ['alice', live()],
      ['bob', live()],
    ]);
    const [email, name, token, city] = run('Protect', 'alice', ring, [
      ['email', 'a@example.org'],
      ['name', 'Alice A'],
      ['token', 'x'],
      ['city', 'Oslo'],
    ]);
    expect(
      run('Unprotect', 'alice', ring, [
        ['email', email!],
        ['name', name!],
        ['city', city!],
      ]),
    ).toEqual(['a@example.org', 'Alice A', 'Oslo']);
    const wrong = veilErrorOf(
      () =>
        run('Unprotect', 'bob', ring, [
          ['email', email!],
          ['name', name!],
          ['city', city!],
        ]),
      'PROTECTED_VALUE_INVALID',
    );
    // the shared-key field (city) is not the subject's: only the two scoped ones are refused
    expect(wrong.details.map((d) => d.propertyName)).toEqual(['email', 'name']);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('deterministic steps are equal within one subject and differ across subjects', () => {
    const ring = new Map([
      ['alice', live()],
      ['bob', live()],
    ]);
    const a1 = run('Protect', 'alice', ring, [
      ['email', 'same@example.org'],
      ['token', 'same'],
    ]);
    const a2 = run('Protect', 'alice', ring, [
      ['email', 'same@example.org'],
      ['token', 'same'],
    ]);
    const b = run('Protect', 'bob', ring, [
      ['email', 'same@example.org'],
      ['token', 'same'],
    ]);
    expect(a1).toEqual(a2);
    expect(b[0]).not.toBe(a1[0]);
    expect(b[1]).not.toBe(a1[1]);
  });

  it('an erased subject answers SUBJECT_ERASED per value, for protect and unprotect; other subjects are untouched', () => {
    const alice = live();
    const [email] = run('Protect', 'alice', new Map([['alice', alice]]), [['email', 'a@example.org']]);
    const e = veilErrorOf(
      () =>
        run('Unprotect', 'alice', new Map([['alice', erased()]]), [
          ['email', email!],
          ['email', email!],
        ]),
      'SUBJECT_ERASED',
    );
    expect(e.status).toBe(422);
    expect(e.details.map((d) => d.pointer)).toEqual(['/requests/0/instances/0/value', '/requests/0/instances/1/value']);
    expect(JSON.stringify(e)).not.toContain('alice');
    veilErrorOf(() => run('Protect', 'alice', new Map([['alice', erased()]]), [['email', 'a@example.org']]), 'SUBJECT_ERASED');
  });

  it("a returning person: values of the erased generation answer SUBJECT_ERASED, the new generation's unprotect", () => {
    const [old] = run('Protect', 'alice', new Map([['alice', live(1)]]), [['name', 'Alice A']]);
    const renewed = new Map([['alice', live(2)]]);
    const [fresh] = run('Protect', 'alice', renewed, [['name', 'Alice B']]);
    veilErrorOf(() => run('Unprotect', 'alice', renewed, [['name', old!]]), 'SUBJECT_ERASED');
    expect(run('Unprotect', 'alice', renewed, [['name', fresh!]])).toEqual(['Alice B']);
    // a generation beyond the subject's is a forged header, not an erasure
    veilErrorOf(() => run('Unprotect', 'alice', renewed, [['name', withKeyVersion(fresh!, 3)]]), 'PROTECTED_VALUE_INVALID');
    veilErrorOf(() => run('Unprotect', 'alice', renewed, [['name', tamper(fresh!)]]), 'PROTECTED_VALUE_INVALID');
  });

  it('a subject with no key: unprotect is PROTECTED_VALUE_INVALID (nothing was protected under it)', () => {
    const [email] = run('Protect', 'alice', new Map([['alice', live()]]), [['email', 'a@example.org']]);
    veilErrorOf(() => run('Unprotect', 'carol', new Map([['carol', undefined]]), [['email', email!]]), 'PROTECTED_VALUE_INVALID');
  });

  it('the plan names the subject, and whether its key may be created (a forward sequence runs)', () => {
    const protect = engine.plan(
      call('Protect', 'alice', [
        ['email', 'a@example.org'],
        ['city', 'Oslo'],
      ]),
      who,
    );
    expect(protect.requests[0]!.subject).toEqual({ id: 'alice', create: true });
    const unprotect = engine.plan(call('Unprotect', 'alice', [['email', 'x']]), who);
    expect(unprotect.requests[0]!.subject).toEqual({ id: 'alice', create: false });
    // only shared keys in the request: the subject is not fetched at all
    expect(engine.plan(call('Protect', 'alice', [['city', 'Oslo']]), who).requests[0]!.subject).toBeUndefined();
  });

  it('a scoped field without a Subject is refused (422 SUBJECT_REQUIRED, pointing at the instance); shared fields need none', () => {
    const e = veilErrorOf(
      () =>
        engine.plan(
          call('Protect', undefined, [
            ['city', 'Oslo'],
            ['email', 'a@example.org'],
          ]),
          who,
        ),
      'SUBJECT_REQUIRED',
    );
    expect(e.status).toBe(422);
    expect(e.details.map((d) => d.pointer)).toEqual(['/requests/0/instances/1']);
    expect(engine.plan(call('Protect', undefined, [['city', 'Oslo']]), who).requests[0]!.subject).toBeUndefined();
  });

  it('a Subject that is not a subject id, or two of them, is 400 SUBJECT_ID_INVALID without echoing it', () => {
    for (const bad of ['', 'a\u0000b', 'x'.repeat(513), '\ud800']) {
      const e = veilErrorOf(() => engine.plan(call('Protect', bad, [['email', 'a@example.org']]), who), 'SUBJECT_ID_INVALID');
      expect(e.details[0]!.pointer).toBe('/processingContexts/0/evidences/1/value');
      if (bad) expect(JSON.stringify(e)).not.toContain(bad);
    }
    const two = veilErrorOf(() => engine.plan(call('Protect', 'alice', [['email', 'a']], [{ name: 'Subject', value: 'bob' }]), who), 'SUBJECT_ID_INVALID');
    expect(two.details[0]!.pointer).toBe('/processingContexts/0/evidences/2/value');
    // a Subject is not an unknown evidence, and does not hide one
    const unknown = veilErrorOf(() => engine.plan(call('Protect', 'alice', [['email', 'a']], [{ name: 'Purpose', value: 'x' }]), who), 'EVIDENCE_UNKNOWN');
    expect(unknown.details[0]!.pointer).toBe('/processingContexts/0/evidences/2/name');
  });

  it('a subject the adapter did not fetch fails the call (503 KEY_UNAVAILABLE), never a shared key', () => {
    veilErrorOf(() => run('Protect', 'alice', undefined, [['email', 'a@example.org']]), 'KEY_UNAVAILABLE');
    veilErrorOf(() => run('Protect', 'alice', new Map([['bob', live()]]), [['email', 'a@example.org']]), 'KEY_UNAVAILABLE');
  });

  it('bound transforms (a pipeline) run under the subject withSubject names; outside it, SUBJECT_REQUIRED per value', () => {
    const bound = engine.bind({
      identity: who,
      rightsEvidences: [{ name: 'Role', value: 'agent' }],
      processingEvidences: [{ name: 'Action', value: 'Protect' }],
      fields: [{ className: 'Customer', propertyName: 'email' }],
    });
    const ring = new Map([['alice', live()]]);
    const [out] = engine.withSubject('alice', ring, () => bound.transforms[0]!.many(['a@example.org']));
    expect(typeof out).toBe('string');
    expect(run('Unprotect', 'alice', ring, [['email', out as string]])).toEqual(['a@example.org']);
    const [refused] = bound.transforms[0]!.many(['a@example.org']);
    expect(refused).toMatchObject({ code: 'SUBJECT_REQUIRED' });
  });
});

describe('configuration of subject-scoped keys', () => {
  const errorsOf = (text: string) =>
    compileConfigText(text)
      .issues.filter((i) => i.severity === 'error')
      .map((i) => `${i.pointer}: ${i.message}`);

  it('FF1 under a subject key needs erased ids to stay refused (its output has no room for a generation)', () => {
    const ff1 = '  person-ff1: { type: ff1, scope: subject }';
    expect(errorsOf(CONFIG('new-key', ff1))).toEqual([
      expect.stringMatching(/^\/keys\/person-ff1\/scope: ff1 output has no room for the subject key's generation/),
    ]);
    expect(errorsOf(CONFIG('refuse', ff1))).toEqual([]);
  });

  it('a scoped key pins no version; a configured context cannot match on Subject', () => {
    expect(errorsOf(CONFIG('new-key', '  pinned: { type: aes-gcm, scope: subject, version: 2 }'))).toEqual([
      expect.stringMatching(/^\/keys\/pinned\/version: /),
    ]);
    const subjectContext = CONFIG().replace('protect: { evidences: { Action: Protect } }', 'protect: { evidences: { Action: Protect, Subject: alice } }');
    expect(errorsOf(subjectContext)).toEqual([expect.stringMatching(/^\/processingContexts\/protect\/evidences\/Subject: /)]);
  });

  it('FF1 scoped with returning: refuse: per subject, format-preserving, SUBJECT_ERASED once erased', () => {
    const text = CONFIG('refuse', '  person-ff1: { type: ff1, scope: subject }')
      .replace('  city: { steps', '  pan: { steps: [{ type: ff1, key: person-ff1, alphabet: digits }] }\n  city: { steps')
      .replace('      city: { protect: city }', '      city: { protect: city }\n      pan: { protect: pan }');
    const { engine } = engineFixture(text);
    const alice = new Map([['alice', live()]]);
    const bob = new Map([['bob', live()]]);
    const protect = (subject: string, ring: SubjectKeyring) =>
      valuesOf(engine.execute(engine.plan(call('Protect', subject, [['pan', '4111111111111111']]), who), ring))[0]!;
    const a = protect('alice', alice);
    expect(a).toMatch(/^\d{16}$/);
    expect(protect('bob', bob)).not.toBe(a);
    expect(valuesOf(engine.execute(engine.plan(call('Unprotect', 'alice', [['pan', a]]), who), alice))).toEqual(['4111111111111111']);
    veilErrorOf(() => engine.execute(engine.plan(call('Unprotect', 'alice', [['pan', a]]), who), new Map([['alice', erased()]])), 'SUBJECT_ERASED');
  });
});

describe('engine: the primitives of subject-scoped keys', () => {
  it('are Primitives.subjectKeys when given (every mode), the shared keys keep the engine primitives', () => {
    const built: string[] = [];
    const tagged = (tag: string): Primitives => ({
      aesSiv: (k) => (built.push(`${tag} aes-siv`), JS_PRIMITIVES.aesSiv(k)),
      aesGcm: (k) => (built.push(`${tag} aes-gcm`), JS_PRIMITIVES.aesGcm(k)),
      hmacSha256: (k) => (built.push(`${tag} hmac-sha256`), JS_PRIMITIVES.hmacSha256(k)),
      ff1: (k, r, t) => (built.push(`${tag} ff1`), JS_PRIMITIVES.ff1(k, r, t)),
      ff31: (k, r, t) => (built.push(`${tag} ff3-1`), JS_PRIMITIVES.ff31(k, r, t)),
    });
    const { engine } = engineFixture(CONFIG(), { primitives: { ...tagged('engine'), subjectKeys: tagged('subject') } });
    const ring = new Map([['alice', live()]]);
    const plan = engine.plan(
      call('Protect', 'alice', [
        ['email', 'a@example.org'],
        ['name', 'Alice A'],
        ['token', 'alice-1'],
        ['city', 'Lyon'],
      ]),
      who,
    );
    engine.execute(plan, ring);
    expect(built.sort()).toEqual(['engine aes-siv', 'subject aes-gcm', 'subject aes-siv', 'subject hmac-sha256']);
  });

  it("the native core's hands subject keys to the JavaScript engine's: their values cross one call each", () => {
    expect(nativePrimitives().subjectKeys).toBe(JS_PRIMITIVES);
  });
});
