import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLIENT_ERROR_CATALOG, VeilClientError } from '../../src/client/index.ts';
import { errorFromResponse } from '../../src/client/errors.ts';

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

describe('client errors', () => {
  it('docs/errors.md lists exactly the client codes, with retriable and meaning', () => {
    const section = doc.slice(doc.indexOf('## Client errors (veil/client)'));
    const rows = [...section.matchAll(/^\| `([A-Z_]+)` \| (yes|no) \| (.+) \|$/gm)].map((m) => [m[1], { retriable: m[2] === 'yes', title: m[3] }]);
    expect(Object.fromEntries(rows)).toEqual(CLIENT_ERROR_CATALOG);
  });

  it("maps veil's problem details: code, status, retriable, pointer, details, request id; the message holds neither detail nor values", () => {
    const body = {
      type: 'urn:veil:error:action-not-granted',
      title: 'The action is not granted on the field',
      status: 403,
      detail: 'echo: alice@example.com',
      code: 'ACTION_NOT_GRANTED',
      retriable: false,
      pointer: '/requests/0/instances/0',
      errors: [
        {
          code: 'ACTION_NOT_GRANTED',
          pointer: '/requests/0/instances/0',
          message: 'Unprotect is not granted',
          className: 'Customer',
          propertyName: 'email',
          value: 'alice@example.com',
        },
      ],
    };
    const e = errorFromResponse(403, body, new Headers({ 'x-request-id': 'r-9' }), undefined);
    expect(e).toBeInstanceOf(VeilClientError);
    expect(e).toMatchObject({ code: 'ACTION_NOT_GRANTED', status: 403, retriable: false, pointer: '/requests/0/instances/0', requestId: 'r-9' });
    expect(e.details).toEqual([
      { code: 'ACTION_NOT_GRANTED', pointer: '/requests/0/instances/0', message: 'Unprotect is not granted', className: 'Customer', propertyName: 'email' },
    ]);
    expect(e.message).toBe('veil: ACTION_NOT_GRANTED (HTTP 403): The action is not granted on the field at /requests/0/instances/0');
    expect(JSON.stringify(e) + e.message + e.stack).not.toContain('alice');
  });

  it('falls back on the status when the answer is not a problem', () => {
    expect(errorFromResponse(503, undefined, new Headers(), 1000)).toMatchObject({ code: 'HTTP_ERROR', status: 503, retriable: true, retryAfterMs: 1000 });
    expect(errorFromResponse(400, { error: 'invalid_client', error_description: 'x' }, new Headers(), undefined)).toMatchObject({
      code: 'TOKEN_REFUSED',
      oauthError: 'invalid_client',
      retriable: false,
    });
    // a code that is not one of veil's shape is not trusted as a code
    expect(errorFromResponse(500, { code: 'alice@example.com' }, new Headers(), undefined)).toMatchObject({ code: 'HTTP_ERROR' });
  });
});
