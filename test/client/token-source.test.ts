import { describe, expect, it } from 'vitest';
import { clientCredentials } from '../../src/client/index.ts';
import { retryPolicy } from '../../src/client/retry.ts';
import { fakeClock } from './fake-veil.ts';

function source(answer: () => Promise<Response>, options: { skew?: number } = {}) {
  const clock = fakeClock();
  let calls = 0;
  const tokens = clientCredentials({
    tokenUrl: 'http://veil.test/connect/token',
    clientId: 'app',
    clientSecret: 's',
    clock,
    retry: retryPolicy({ maxAttempts: 1 }),
    attemptTimeoutMs: 1000,
    ...(options.skew === undefined ? {} : { refreshSkewMs: options.skew }),
    fetch: async () => {
      calls++;
      return answer();
    },
  });
  return { tokens, clock, calls: () => calls };
}

describe('clientCredentials', () => {
  it('one request for concurrent callers while it is in flight', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let n = 0;
    const { tokens, calls } = source(async () => {
      await gate;
      return Response.json({ access_token: `t${++n}`, expires_in: 60 });
    });
    const all = Promise.all(Array.from({ length: 10 }, () => tokens.get()));
    release();
    expect(await all).toEqual(Array(10).fill('t1'));
    expect(calls()).toBe(1);
  });

  it('the skew is at most half the lifetime, counted from when the request left', async () => {
    let n = 0;
    const { tokens, clock } = source(async () => Response.json({ access_token: `t${++n}`, expires_in: 20 }), { skew: 30_000 });
    expect(await tokens.get()).toBe('t1');
    clock.advance(9_999);
    expect(await tokens.get()).toBe('t1');
    clock.advance(1);
    expect(await tokens.get()).toBe('t2');
  });

  it('invalidate forgets only the refused token', async () => {
    let n = 0;
    const { tokens } = source(async () => Response.json({ access_token: `t${++n}`, expires_in: 60 }));
    expect(await tokens.get()).toBe('t1');
    tokens.invalidate('t0');
    expect(await tokens.get()).toBe('t1');
    tokens.invalidate('t1');
    expect(await tokens.get()).toBe('t2');
  });

  it('refuses a token answer without access_token; a missing expires_in gets the default lifetime', async () => {
    await expect(source(async () => Response.json({ token_type: 'Bearer' })).tokens.get()).rejects.toMatchObject({ code: 'RESPONSE_INVALID' });
    let n = 0;
    const { tokens, clock } = source(async () => Response.json({ access_token: `t${++n}` }), { skew: 0 });
    await tokens.get();
    clock.advance(59_999);
    expect(await tokens.get()).toBe('t1');
    clock.advance(1);
    expect(await tokens.get()).toBe('t2');
  });
});
