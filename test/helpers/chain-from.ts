import { ValueError, type Chain } from '../../src/engine/index.ts';

/**
 * A Chain of a plain function, for tests that need a field's transformation without a
 * configuration: one value as `one` answers, a batch value by value, a value's ValueError in its
 * place (what the engine's chains do; anything else is thrown).
 */
export function chainFrom(one: (value: string) => string): Chain {
  const many = (values: readonly string[]): (string | ValueError)[] =>
    values.map((v) => {
      try {
        return one(v);
      } catch (e) {
        if (e instanceof ValueError) return e;
        throw e;
      }
    });
  return Object.assign((value: string) => one(value), { many });
}
