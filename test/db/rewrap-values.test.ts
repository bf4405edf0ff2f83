import { describe, expect, it } from 'vitest';
import type { SubjectKeyring } from '../../src/engine/index.ts';
import { rewrapValues, type RewrapSubjects, type RewrapTransform } from '../../src/db/rewrap-values.ts';

/** veil db rewrap's values of a batch, with and without a subject column (issue 29). */
let current: string | undefined;
const chain = (tag: string): RewrapTransform => ({
  many: (values) => values.map((v) => (current === 'gone' ? { code: 'SUBJECT_ERASED' } : `${tag}:${current ?? '-'}:${v}`)),
});

describe('veil db rewrap: values of a batch', () => {
  it("without a subject column: each column's non-NULL values through its chain, NULL stays NULL", async () => {
    expect(
      await rewrapValues(
        [chain('e'), chain('n')],
        [
          ['a', null],
          [null, 'b'],
        ],
      ),
    ).toEqual([
      ['e:-:a', null],
      [null, 'n:-:b'],
    ]);
  });

  it("with one: the batch's subjects fetched once, never created; each subject's values under it; no subject or a bad id refused per value", async () => {
    const fetched: string[][] = [];
    const access: RewrapSubjects = {
      keys: async (ids) => {
        fetched.push([...ids]);
        return new Map() as SubjectKeyring;
      },
      within: (subject, _ring, fn) => {
        current = subject;
        try {
          return fn();
        } finally {
          current = undefined;
        }
      },
    };
    const ids = ['ann', 'gone', null, 'ann', 'bad\u0001', null];
    const out = await rewrapValues([chain('e')], [['a1', 'g1', 'x', 'a2', 'y', null]], { ids, access });
    expect(fetched).toEqual([['ann', 'gone']]);
    expect(out).toEqual([['e:ann:a1', { code: 'SUBJECT_ERASED' }, { code: 'SUBJECT_REQUIRED' }, 'e:ann:a2', { code: 'SUBJECT_ID_INVALID' }, null]]);
  });
});
