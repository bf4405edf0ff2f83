import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { combine, ERROR_CATALOG, VeilError } from '../../src/engine/errors.ts';

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
const rows = new Map(
  [...doc.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \| (yes|no) \| (.+) \|$/gm)].map((m) => [m[1]!, { status: Number(m[2]), retriable: m[3] === 'yes' }]),
);

describe('error catalog', () => {
  it('docs/errors.md lists exactly the codes of ERROR_CATALOG with their status and retriable', () => {
    expect([...rows.keys()].sort()).toEqual(Object.keys(ERROR_CATALOG).sort());
    for (const [code, entry] of Object.entries(ERROR_CATALOG)) {
      expect(rows.get(code), code).toEqual({ status: entry.status, retriable: entry.retriable });
    }
  });

  it('uses client statuses for caller mistakes; retriable only for rate limits and service-side outages', () => {
    for (const [code, entry] of Object.entries(ERROR_CATALOG)) {
      expect(entry.status, code).toBeGreaterThanOrEqual(400);
      if (entry.retriable) expect(entry.status === 429 || entry.status >= 500, code).toBe(true);
    }
  });

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
