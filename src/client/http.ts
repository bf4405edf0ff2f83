import { clientError, errorFromResponse, VeilClientError } from './errors.ts';
import { parseRetryAfter, type AttemptContext, type Clock } from './retry.ts';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface HttpAnswer {
  status: number;
  headers: Headers;
  body: unknown;
}

export interface PostOptions {
  fetch: FetchLike;
  clock: Clock;
  attemptTimeoutMs: number;
}

/**
 * One POST: times out at the attempt timeout or the operation's deadline, whichever is first,
 * and turns every failure into a VeilClientError (transport failures are NETWORK_ERROR,
 * retriable). Answers of 2xx come back parsed; others are thrown, mapped from problem details.
 */
export async function postOnce(
  url: string,
  init: { headers: Record<string, string>; body: string },
  ctx: AttemptContext,
  options: PostOptions,
): Promise<HttpAnswer> {
  const remaining = ctx.deadline - options.clock.now();
  if (remaining <= 0) throw clientError('DEADLINE_EXCEEDED');
  const byDeadline = remaining <= options.attemptTimeoutMs;
  const timeout = AbortSignal.timeout(Math.min(remaining, options.attemptTimeoutMs));
  const signal = AbortSignal.any([ctx.signal, timeout]);
  try {
    const res = await options.fetch(url, { method: 'POST', headers: init.headers, body: init.body, signal, redirect: 'error' });
    const text = await res.text();
    const body = parseJson(text, res.headers.get('content-type'));
    if (res.ok) {
      if (body === undefined) throw clientError('RESPONSE_INVALID', { status: res.status, requestId: res.headers.get('x-request-id') ?? undefined });
      return { status: res.status, headers: res.headers, body };
    }
    throw errorFromResponse(res.status, body, res.headers, parseRetryAfter(res.headers.get('retry-after'), options.clock.now()));
  } catch (e) {
    if (e instanceof VeilClientError) throw e;
    if (ctx.signal.aborted) throw clientError('ABORTED', { cause: ctx.signal.reason });
    if (timeout.aborted) throw clientError(byDeadline ? 'DEADLINE_EXCEEDED' : 'ATTEMPT_TIMEOUT');
    // fetch's own errors (TypeError "fetch failed" with the socket error as cause) hold no values
    throw clientError('NETWORK_ERROR', { cause: e });
  }
}

function parseJson(text: string, contentType: string | null): unknown {
  if (!/^application\/([a-z.+-]*\+)?json\s*(;|$)/i.test(contentType ?? '')) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
