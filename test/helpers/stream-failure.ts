import { expect } from 'vitest';
import { StreamError } from '../../src/stream/stream-error.ts';

/** the StreamError a promise rejects with; the test fails if it resolves or rejects with anything else */
export async function streamFailure(p: Promise<unknown>): Promise<StreamError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(StreamError);
  return e as StreamError;
}
