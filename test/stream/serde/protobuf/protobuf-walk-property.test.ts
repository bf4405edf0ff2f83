import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allowedPath } from '../../../../src/drift-guard/json-guard.ts';
import { ObjectGuard } from '../../../../src/drift-guard/object-guard.ts';
import { compilePlan, type PlanNode } from '../../../../src/stream/serde/protobuf/protobuf-plan.ts';
import { protectMessage, type ProtectContext } from '../../../../src/stream/serde/protobuf/protobuf-protect.ts';
import { protoFinding } from '../../../../src/stream/serde/protobuf/protobuf-drift-guard.ts';
import { parseProtoSchema } from '../../../../src/stream/serde/protobuf/protobuf-schema.ts';
import { WireReader } from '../../../../src/stream/serde/protobuf/protobuf-wire.ts';
import { StreamError } from '../../../../src/stream/stream-error.ts';
import { refFields, refProtectMessage, refProtoFinding } from './protobuf-reference.ts';

// The fast walk (one-buffer writer, inline wire types, compiled guard levels) against the walk it
// replaced (protobuf-reference.ts) on random messages: the same bytes out, the same values met,
// the same finding, the same error — for well-formed messages, unknown fields, groups, wrong wire
// types, non-canonical varints, invalid UTF-8 and truncations alike.

const PROTO = `syntax = "proto3";
package t;
message Root {
  int64 id = 1;
  string email = 2;
  string name = 3;
  Inner inner = 4;
  repeated Inner items = 5;
  repeated int32 counts = 6;
  repeated string tags = 7;
  map<string, string> attrs = 8;
  sint32 delta = 9;
  uint64 card = 10;
  fixed64 pan = 11;
  sfixed32 small = 12;
  bytes blob = 13;
  bool flag = 14;
  double price = 15;
  Level level = 16;
  string phone = 17;
  int32 birth_year = 18;
  message Inner { string street = 1; string note = 2; int32 qty = 3; sint64 offset = 4; Inner next = 5; repeated sint32 deltas = 6; string mobile = 7; }
  enum Level { ZERO = 0; ONE = 1; }
}
`;
const schema = parseProtoSchema(PROTO);
const root = schema.messages.get('t.Root')!;
const inner = schema.messages.get('t.Root.Inner')!;
const PATHS = ['email', 'name', 'inner.street', 'items[].note', 'id', 'counts[]', 'level', 'tags[]', 'card', 'pan', 'delta', 'inner.next.street'];
const ALLOW = ['inner.note', 'items[].next', 'attrs', 'phone'];
const STRINGS = [
  'ada@example.com',
  '4111 1111 1111 1111',
  '4111111111111111',
  'standard delivery',
  'Ada Lovelace',
  '+44 20 7946 0958',
  'é',
  'GB82WEST12345698765432',
  'AB123456C',
  '078-05-1120',
  '1990-04-12',
  'x'.repeat(200),
  'y'.repeat(300),
  'z'.repeat(14000),
  '',
  'abcd',
  'refuse me',
  'SKU-12',
  'ü@example.com',
];

/** a small deterministic generator, so that a failing seed replays */
function rng(seed: number): (n: number) => number {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s % n;
  };
}

function varint(v: bigint): number[] {
  let x = BigInt.asUintN(64, v);
  const out: number[] = [];
  while (x >= 0x80n) {
    out.push(Number(x & 0x7fn) | 0x80);
    x >>= 7n;
  }
  out.push(Number(x));
  return out;
}

function tag(number: number, wireType: number): number[] {
  return varint(BigInt(number * 8 + wireType));
}

function randomVarint(r: (n: number) => number): number[] {
  switch (r(7)) {
    case 0:
      return varint(BigInt(r(200)));
    case 1:
      return varint(BigInt(r(20000)));
    case 6:
      return varint(BigInt(r(2 ** 28) * (r(2) + 1))); // three to five bytes
    case 2:
      return varint(BigInt(-1 - r(100000))); // a negative int32/int64: ten bytes
    case 3:
      return varint(4111111111111111n + BigInt(r(10)));
    case 4:
      return [0x80 | r(128), 0x00]; // non-canonical: a two-byte small value
    default:
      return varint(BigInt(r(2 ** 31)) * BigInt(r(2 ** 20) + 1));
  }
}

function randomText(r: (n: number) => number): number[] {
  const pick = r(10);
  if (pick === 0) return [0xff, 0xfe, 0x41]; // not UTF-8
  if (pick === 1) return [...Buffer.from(String(100000 + r(10 ** 9)))];
  return [...Buffer.from(STRINGS[r(STRINGS.length)]!)];
}

function len(number: number, body: number[]): number[] {
  return [...tag(number, 2), ...varint(BigInt(body.length)), ...body];
}

/** one field occurrence: mostly as the schema types it, sometimes another wire type, an unknown field or a group */
function randomField(r: (n: number) => number, depth: number, numbers: number[], kindOf: (n: number) => string): number[] {
  const roll = r(20);
  if (roll === 0) return [...tag(100 + r(3000), 0), ...randomVarint(r)]; // unknown
  if (roll === 1) return [...tag(900, 3), ...tag(1, 0), 5, ...tag(900, 4)]; // an unknown group
  const number = numbers[r(numbers.length)]!;
  const kind = kindOf(number);
  if (roll === 2) return [...tag(number, r(6)), ...randomVarint(r)]; // any wire type: often malformed
  switch (kind) {
    case 'string':
    case 'bytes':
      return len(number, randomText(r));
    case 'message':
      return len(number, depth >= 3 ? [] : randomMessage(r, depth + 1, true));
    case 'map':
      return len(number, [...len(1, randomText(r)), ...len(2, randomText(r))]);
    case 'fixed64':
    case 'double':
      return [...tag(number, 1), ...Array.from({ length: 8 }, () => r(256))];
    case 'sfixed32':
      return [...tag(number, 5), ...Array.from({ length: 4 }, () => r(256))];
    default:
      // packed or not, for repeated integers
      if (r(3) === 0) return len(number, Array.from({ length: 1 + r(4) }, () => randomVarint(r)).flat());
      return [...tag(number, 0), ...randomVarint(r)];
  }
}

function randomMessage(r: (n: number) => number, depth: number, isInner: boolean): number[] {
  const message = isInner ? inner : root;
  const numbers = message.fields.map((f) => f.number);
  const kindOf = (n: number) => message.fields.find((f) => f.number === n)!.kind;
  return Array.from({ length: r(12) }, () => randomField(r, depth, numbers, kindOf)).flat();
}

function outcome(run: () => unknown): unknown {
  try {
    return run();
  } catch (e) {
    if (e instanceof StreamError) return `${e.code}: ${e.message}`;
    throw e;
  }
}

const plans = new Map<string, { plan: PlanNode; guard: ObjectGuard }>();
function planOf(r: (n: number) => number): { paths: string[]; plan: PlanNode; guard: ObjectGuard } {
  const paths = PATHS.filter(() => r(3) === 0);
  const allow = ALLOW.filter(() => r(2) === 0);
  const key = `${paths.join(',')}|${allow.join(',')}`;
  let got = plans.get(key);
  // one guard per plan, kept: its compiled levels are reused across records, as in a pipeline
  if (got === undefined) plans.set(key, (got = { plan: compilePlan(schema, root, paths).plan, guard: new ObjectGuard(paths, allow.map(allowedPath), false) }));
  return { paths, ...got };
}

describe('the Protobuf fast walk equals the walk it replaced', () => {
  it('protects, collects, guards and reads fields alike on random messages', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (seed) => {
        const r = rng(seed);
        let body = randomMessage(r, 0, false);
        if (r(8) === 0) body = body.slice(0, r(body.length + 1)); // truncated
        const b = Buffer.from([7, 7, ...body, 9]); // the message is b[2, length - 1)
        const [from, to] = [2, b.length - 1];
        const { plan, guard } = planOf(r);
        const missing = r(2) === 0 ? ('pass' as const) : ('dead-letter' as const);
        // each side's protect draws from its own generator, started at the same state
        const ctx = (s: number, dryRun: boolean, met: string[]): ProtectContext => {
          const rr = rng(s);
          return {
            schema,
            missing,
            dryRun,
            protect: (path, text) => {
              met.push(`${path}=${text}`);
              if (text.includes('refuse')) throw new StreamError('VALUE_NOT_IN_ALPHABET', `mapped field ${path}: refused`);
              return rr(4) === 0 ? `é${path}:${text.length}` : `P(${path}|${text})${'~'.repeat(rr(200))}`;
            },
          };
        };
        for (const dryRun of [false, true]) {
          const metNew: string[] = [];
          const metOld: string[] = [];
          const s = r(1000) + 1;
          const fast = outcome(() => protectMessage(b, from, to, plan, ctx(s, dryRun, metNew)));
          const ref = outcome(() => refProtectMessage(b, from, to, plan, ctx(s, dryRun, metOld)));
          expect(fast).toEqual(ref);
          expect(metNew).toEqual(metOld);
        }
        expect(outcome(() => protoFinding(b, from, to, root, schema, guard))).toEqual(outcome(() => refProtoFinding(b, from, to, root, schema, guard)));
        const fields = (reader: () => unknown) => outcome(reader);
        expect(
          fields(() => {
            const f = new WireReader(b, from, to);
            const out = [];
            while (f.next()) out.push([f.number, f.wireType, f.start, f.valueStart, f.end]);
            return out;
          }),
        ).toEqual(fields(() => [...refFields(b, from, to)].map((f) => [f.number, f.wireType, f.start, f.valueStart, f.end])));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('the Protobuf guard on packed integers', () => {
  const guard = new ObjectGuard([], [], false);
  const findingOf = (field: number[]) => {
    const b = Buffer.from([7, 7, ...field, ...tag(14, 0), 1, 9]); // the message is b[2, length - 1)
    return outcome(() => protoFinding(b, 2, b.length - 1, root, schema, guard));
  };

  it('refuses a packed run of fixed widths cut short as RECORD_MALFORMED, never reading past the field (a property run found the read past the buffer)', () => {
    expect(findingOf(len(12, [1, 2, 3, 4, 5, 6]))).toMatch(/^RECORD_MALFORMED: /);
    expect(findingOf(len(11, [1, 2, 3, 4, 5, 6, 7, 8, 9]))).toMatch(/^RECORD_MALFORMED: /);
    // whole widths read as before
    expect(findingOf(len(12, [1, 2, 3, 4, 5, 6, 7, 8]))).toBeUndefined();
  });

  it("refuses a packed varint that runs past the field's end as RECORD_MALFORMED, not read on into the next field", () => {
    expect(findingOf(len(18, [0x80, 0x80]))).toMatch(/^RECORD_MALFORMED: /);
    expect(findingOf(len(18, [0x80, 0x01, 0x05]))).toBeUndefined();
  });
});
