import { describe, expect, it } from 'vitest';
import { combine, VeilError } from '../../src/engine/errors.ts';

describe("the engine's errors", () => {
  it('VeilError carries code, status, retriable and details, and serializes without a stack', () => {
    const e = combine([
      { code: 'VALUE_TOO_SHORT', pointer: '/requests/0/instances/1/value', message: 'a', request: 'r', instance: 1 },
      { code: 'VALUE_TOO_SHORT', pointer: '/requests/0/instances/2/value', message: 'b', request: 'r', instance: 2 },
    ]);
    expect(e).toBeInstanceOf(VeilError);
    expect(e.status).toBe(422);
    expect(e.retriable).toBe(false);
    const json = JSON.parse(JSON.stringify(e));
    expect(Object.keys(json).sort()).toEqual(['code', 'details', 'message', 'retriable']);
    expect(json.details).toHaveLength(2);
    expect(json.message).toMatch(/^2 problems/);
  });
});
