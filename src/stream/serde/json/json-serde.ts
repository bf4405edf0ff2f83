import type { Serde } from '../serde.ts';
import { protectJsonBytes, protectJsonValues } from './json-splice.ts';
import { jsonSubjectReader } from './json-subject.ts';

/**
 * UTF-8 JSON values, changed in place: only the bytes of the mapped values are replaced, so
 * numbers, key order, whitespace, escapes and duplicate keys outside them stay byte for byte.
 */
export function jsonSerde(): Serde {
  return {
    async protect(bytes, protection) {
      return protectJsonBytes(bytes, protection);
    },
    protectManySync: (values, protection, fields) => protectJsonValues(values, protection, fields),
    subjectReader: jsonSubjectReader,
  };
}
