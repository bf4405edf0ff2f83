import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * veil_requests.py, the bodies of the database's POST /transform calls (keys scoped to the data
 * subject, issue 29), run by python3 as PL/Python runs it: one processing context and request per
 * subject, answers and errors mapped back to the values' order.
 */
const source = readFileSync(new URL('../../src/db/plpython/veil_requests.py', import.meta.url), 'utf8');

function python(script: string): unknown {
  return JSON.parse(execFileSync('python3', ['-c', `${source}\n${script}`], { encoding: 'utf8' }));
}

describe("the database's transform bodies, grouped by data subject", () => {
  const chunk = `[('P', 'email', 'v0', 'ann'), ('P', 'name', 'v1', 'bob'), ('P', 'email', 'v2', 'ann'), ('P', 'city', 'v3', None)]`;

  it('one processing context (Action and Subject) and one request per subject, in the order they first occur', () => {
    const body = python(`import json, sys\nc = ${chunk}\nprint(request_body('Protect', 'ingest', c, request_groups(c)).decode())`) as {
      processingContexts: { guid: string; evidences: { name: string; value: string }[] }[];
      requests: { processingContext: string; instances: { value: string }[] }[];
    };
    expect(body.processingContexts.map((c) => c.evidences.map((e) => e.value))).toEqual([['Protect', 'ann'], ['Protect', 'bob'], ['Protect']]);
    expect(body.requests.map((r) => r.instances.map((i) => i.value))).toEqual([['v0', 'v2'], ['v1'], ['v3']]);
    expect(body.requests.map((r) => r.processingContext)).toEqual(body.processingContexts.map((c) => c.guid));
  });

  it("maps a 200 answer and a problem's errors back to the values' order; refuses an answer of another shape", () => {
    const out = python(`import json
c = ${chunk}
g = request_groups(c)
ok = json.dumps({'responses': [{'request': group_guid(REQUEST_BASE, i), 'instances': [{'className': 'P', 'propertyName': 'x', 'value': 'p' + c[k][2]} for k in ks]} for i, (_s, ks) in enumerate(g)]})
short = json.dumps({'responses': [{'request': group_guid(REQUEST_BASE, 0), 'instances': []}]})
errors = [{'code': 'SUBJECT_ERASED', 'request': group_guid(REQUEST_BASE, 0), 'instance': 1}, {'code': 'X', 'request': 'other', 'instance': 0}, 'junk']
print(json.dumps([response_values(ok, g, 4), response_values(short, g, 4), error_positions(errors, g)]))`);
    expect(out).toEqual([['pv0', 'pv1', 'pv2', 'pv3'], null, [[2, 'SUBJECT_ERASED']]]);
  });
});
