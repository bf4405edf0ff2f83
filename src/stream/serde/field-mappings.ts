import { ValueError, type Chain } from '../../engine/index.ts';
import { compilePath, rewriteAt, type RecordPath } from './record-path.ts';
import { StreamError } from '../stream-error.ts';

export interface Mapping {
  path: string;
  compiled: RecordPath;
  transform: Chain;
}

export function mappings(paths: readonly string[], transforms: readonly Chain[]): Mapping[] {
  return paths.map((path, i) => ({ path, compiled: compilePath(path), transform: transforms[i]! }));
}

/**
 * Protects every mapped field of a decoded record in place. Strings are transformed; numbers and
 * booleans are transformed as their text (the clean field is a string). Absent or null fields
 * pass, or fail with FIELD_MISSING when the pipeline says so. Objects or arrays at a mapped leaf
 * are RECORD_MALFORMED. A value a transformer refuses fails the record with that code. Returns
 * the paths a value was protected at, in mapping order (veil.protected.fields).
 */
export function protectRecord(value: unknown, maps: readonly Mapping[], missing: 'pass' | 'dead-letter'): string[] {
  const done: string[] = [];
  for (const m of maps) {
    rewriteAt(value, m.compiled, m.path, (leaf) => {
      if (leaf === undefined || leaf === null) {
        if (missing === 'dead-letter') throw new StreamError('FIELD_MISSING', `mapped field ${m.path} is absent or null`, { path: m.path });
        return leaf;
      }
      if (typeof leaf === 'object') throw new StreamError('RECORD_MALFORMED', `mapped field ${m.path} is not a scalar`, { path: m.path });
      if (done.at(-1) !== m.path) done.push(m.path);
      try {
        return m.transform(typeof leaf === 'string' ? leaf : String(leaf));
      } catch (e) {
        if (e instanceof ValueError) throw new StreamError(e.code, `mapped field ${m.path}: value ${e.message}`, { path: m.path });
        throw e;
      }
    });
  }
  return done;
}
