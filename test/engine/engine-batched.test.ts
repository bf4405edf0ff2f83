// Engine.execute runs the instances of one field of a request through the chain's batch form
// together (issue 42: a call into the native core per value costs more than the cipher). What a
// caller sees must not change: each value's output as it would be alone, the same refusals with
// the same pointers in the same order.
import { describe, expect, it } from 'vitest';
import { JS_PRIMITIVES, VeilError, type Primitives } from '../../src/engine/index.ts';
import { engineFixture, identity, transformRequest, valuesOf } from '../helpers/engine-fixture.ts';

const fraud = identity('fraud');

/** JS_PRIMITIVES whose FF1 ciphers count their one-value and batch calls. */
function countingFf1(): { primitives: Primitives; calls: { one: number; many: number } } {
  const calls = { one: 0, many: 0 };
  const primitives: Primitives = {
    ...JS_PRIMITIVES,
    ff1: (key, radix, tweak) => {
      const inner = JS_PRIMITIVES.ff1(key, radix, tweak);
      return {
        encrypt: (x) => (calls.one++, inner.encrypt(x)),
        decrypt: (x) => (calls.one++, inner.decrypt(x)),
        encryptMany: (xs) => (calls.many++, inner.encryptMany!(xs)),
        decryptMany: (xs) => (calls.many++, inner.decryptMany!(xs)),
      };
    },
  };
  return { primitives, calls };
}

const card = (i: number) => `4${String(100000000000000 + i * 7919).padStart(15, '0')}`;

describe('Engine.execute: the instances of one field run batched', () => {
  it('a request of many cards and emails gives each value what it gives alone', () => {
    const { engine } = engineFixture();
    const instances = Array.from({ length: 60 }, (_, i): [string, string] => (i % 3 ? ['cardNumber', card(i)] : ['email', `p${i}@example.org`]));
    const together = valuesOf(engine.transform(transformRequest('fraud', 'Protect', ...instances), fraud));
    const alone = instances.map((inst) => valuesOf(engine.transform(transformRequest('fraud', 'Protect', inst), fraud))[0]);
    expect(together).toEqual(alone);
    // and back, batched the same way
    const back = valuesOf(engine.transform(transformRequest('fraud', 'Unprotect', ...instances.map(([p], i) => [p, together[i]!] as const)), fraud));
    expect(back).toEqual(instances.map(([, v]) => v));
  });

  it('crosses into the FF1 cipher once per field and request (and per Luhn walking round), never once per value', () => {
    const { primitives, calls } = countingFf1();
    const { engine } = engineFixture(undefined, { primitives });
    engine.transform(transformRequest('fraud', 'Protect', ...Array.from({ length: 200 }, (_, i) => ['cardNumber', card(i)] as const)), fraud);
    expect(calls.one).toBe(0);
    expect(calls.many).toBeGreaterThan(0);
    // a Luhn-keeping card walks a cycle: each round is one batch of the values still walking
    expect(calls.many).toBeLessThan(60);
  });

  it('refusals in a batch keep their pointers and order, as when each value is sent alone', () => {
    const { engine } = engineFixture();
    const instances: [string, string][] = [
      ['cardNumber', card(1)],
      ['cardNumber', '411'],
      ['email', 'a@example.org'],
      ['cardNumber', card(2)],
      ['cardNumber', '4111 1111 1111 111x'],
      ['cardNumber', '12'],
    ];
    let caught: unknown;
    try {
      engine.transform(transformRequest('fraud', 'Protect', ...instances), fraud);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(VeilError);
    const details = (caught as VeilError).details ?? [];
    const expected = instances.flatMap(([p, v], ii) => {
      try {
        engine.transform(transformRequest('fraud', 'Protect', [p, v]), fraud);
        return [];
      } catch (e) {
        const [d] = (e as VeilError).details ?? [];
        return [{ code: d!.code, pointer: `/requests/0/instances/${ii}/value`, message: d!.message }];
      }
    });
    expect(expected.length).toBeGreaterThan(1);
    expect(details.map((d) => ({ code: d.code, pointer: d.pointer, message: d.message }))).toEqual(expected);
    expect(details.map((d) => d.instance)).toEqual(expected.map((e) => Number(e.pointer.split('/')[4])));
  });
});
