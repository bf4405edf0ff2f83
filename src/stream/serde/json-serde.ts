import { StreamError } from '../stream-error.ts';
import type { Decoded, Serde } from './serde.ts';

/** UTF-8 JSON values. Unmapped fields pass through unchanged (re-serialized). */
export function jsonSerde(): Serde {
  return {
    async decode(bytes) {
      try {
        return { value: JSON.parse(bytes.toString('utf8')) };
      } catch {
        throw new StreamError('RECORD_MALFORMED', 'the value is not JSON');
      }
    },
    async encode(decoded: Decoded) {
      return Buffer.from(JSON.stringify(decoded.value), 'utf8');
    },
  };
}
