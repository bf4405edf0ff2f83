import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { chainFrom } from '../../../helpers/chain-from.ts';
import { mappings } from '../../../../src/stream/serde/field-mappings.ts';
import { protobufSerde } from '../../../../src/stream/serde/protobuf/protobuf-serde.ts';
import { StreamError } from '../../../../src/stream/stream-error.ts';
import { FakeRegistry } from '../fake-registry.ts';
import { confluentFrame } from '../../../helpers/confluent-frame.ts';

// protectMany prepares a record whose header bytes, clean topic and protection equal the last
// prepared record's without asking the caches again: these batches interleave schemas, message
// indexes (and their two spellings of [0]), clean topics and broken headers, and every record
// must come out as a serde that prepares each record on its own makes it.

const A = `syntax = "proto3";
package a;
message Customer { int64 id = 1; string email = 2; string name = 3; }
message Other { string email = 1; string note = 2; }
`;
const B = `syntax = "proto3";
package b;
message Customer { int64 id = 1; string email = 2; string name = 3; string extra = 4; }
`;
const PATHS = ['email'];
const protection = {
  maps: mappings(
    PATHS,
    PATHS.map(() => chainFrom((v: string) => `tok(${v})`)),
  ),
  missing: 'pass' as const,
};

function framed(id: number, indexes: number[], body: Uint8Array): Buffer {
  return confluentFrame(id, Buffer.from(indexes), body);
}

/** a registry whose clean schemas get an id per subject (the fake gives equal texts one id) */
class PerSubject extends FakeRegistry {
  override register(subject: string, schema: string, schemaType?: string): Promise<number> {
    return super.register(subject, `${schema}// ${subject}\n`, schemaType);
  }
}

describe('protobufSerde.protectMany on a batch of mixed headers', () => {
  it('gives each record what a record prepared on its own gets', async () => {
    const registry = new PerSubject();
    const [a, b] = [registry.add(A, 'a-value'), registry.add(B, 'b-value')];
    const ca = protobuf.parse(A, { keepCase: true }).root;
    const cb = protobuf.parse(B, { keepCase: true }).root;
    const enc = (root: protobuf.Root, type: string, o: object) => root.lookupType(type).encode(root.lookupType(type).fromObject(o)).finish();
    const customer = { id: 7, email: 'ada@example.com', name: 'Ada' };
    const records: [Buffer, string][] = [];
    let seed = 11;
    const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 300; i++) {
      const kind = next(7);
      const value =
        kind === 0
          ? framed(a, [0], enc(ca, 'a.Customer', { ...customer, id: i }))
          : kind === 1
            ? framed(a, [2, 0], enc(ca, 'a.Customer', customer)) // [0] spelled out: count 1, index 0
            : kind === 2
              ? framed(a, [2, 2], enc(ca, 'a.Other', { email: `o${i}@example.com`, note: 'n' }))
              : kind === 3
                ? framed(b, [0], enc(cb, 'b.Customer', { ...customer, extra: 'x' }))
                : kind === 4
                  ? framed(b, [2, 2], enc(cb, 'b.Customer', customer)) // no message at [1]
                  : kind === 5
                    ? Buffer.from([1, 0, 0, 0, a, 0]) // no magic byte
                    : framed(a, [0], Buffer.from([0x12, 0x02, 0xff, 0xfe])); // not UTF-8
      records.push([value, next(3) === 0 ? 'clean-2' : 'clean-1']);
    }
    const serde = protobufSerde({ registry, protectedPaths: PATHS });
    // in chunks, as a pipeline sends them: a chunk starts from the last record the one before prepared
    const many: (Buffer | StreamError)[] = [];
    for (let i = 0; i < records.length; i += 1 + (i % 5)) {
      const chunk = records.slice(i, i + 1 + (i % 5));
      many.push(
        ...(await serde.protectMany!(
          chunk.map(([v]) => v),
          protection,
          chunk.map(([, t]) => t),
        )),
      );
    }
    const fresh = await Promise.all(
      records.map(([v, t]) =>
        protobufSerde({ registry, protectedPaths: PATHS })
          .protect(v, protection, t)
          .catch((e: StreamError) => e),
      ),
    );
    const shown = (r: Buffer | StreamError) => (r instanceof StreamError ? `${r.code}: ${r.message}` : r.toString('hex'));
    expect(many.map(shown)).toEqual(fresh.map(shown));
    // each clean topic's records go out under its own clean id
    const ids = (topic: string) => new Set(many.flatMap((r, i) => (r instanceof StreamError || records[i]![1] !== topic ? [] : [r.readUInt32BE(1)])));
    expect([...ids('clean-1')].some((id) => ids('clean-2').has(id))).toBe(false);
    expect(many.filter((r) => r instanceof StreamError).length).toBeGreaterThan(0);
    expect(many.filter((r) => !(r instanceof StreamError)).length).toBeGreaterThan(100);
  });
});
