import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor/index.js';
import { describe, expect, it } from 'vitest';
import { ValueError } from '../../../../src/engine/index.ts';
import { chainFrom } from '../../../helpers/chain-from.ts';
import { mappings } from '../../../../src/stream/serde/field-mappings.ts';
import { protobufSerde } from '../../../../src/stream/serde/protobuf/protobuf-serde.ts';
import { readFraming } from '../../../../src/stream/serde/protobuf/protobuf-wire.ts';
import { StreamError } from '../../../../src/stream/stream-error.ts';
import { FakeRegistry } from '../fake-registry.ts';
import { confluentFrame } from '../../../helpers/confluent-frame.ts';

const PROTO = `// customers as the shop writes them
syntax = "proto3";
package shop.v1;

option java_package = "com.example.shop";

message Ignored { string x = 1; }

message Customer {
  int64 id = 1;
  string email = 2; // protected, already a string
  repeated Card cards = 3;
  Profile profile = 4;
  Level level = 5;
  repeated int32 scores = 6 [packed = true, deprecated = true];
  repeated string tags = 7;
  map<string, string> attributes = 8;
  oneof contact { string phone = 9; int64 pager = 10; }
  message Profile { string name = 1; int32 tier = 2; }
  enum Level { LEVEL_UNSET = 0; GOLD = 1; }
}

message Card {
  /* the PAN, as a number */
  fixed64 number = 1;
  string brand = 2;
}
`;
const PATHS = ['email', 'cards[].number', 'profile.name', 'level', 'scores[]', 'tags[]', 'pager', 'phone'];
const protection = (missing: 'pass' | 'dead-letter' = 'pass', paths = PATHS) => ({
  maps: mappings(
    paths,
    paths.map(() => chainFrom((v: string) => `tok(${v})`)),
  ),
  missing,
});

const raw = protobuf.parse(PROTO, { keepCase: true }).root;
const Customer = raw.lookupType('shop.v1.Customer');

/** the Confluent framing: magic 0, id, message indexes [1] (Customer is the second message) */
function framed(id: number, body: Uint8Array, indexes = Buffer.from([2, 2])): Buffer {
  return confluentFrame(id, indexes, body);
}

const customer = {
  id: 42,
  email: 'ada@example.com',
  cards: [
    { number: 4111111111111111n.toString(), brand: 'visa' },
    { number: '5500000000000004', brand: 'mc' },
  ],
  profile: { name: 'Ada Lovelace', tier: 3 },
  level: 1,
  scores: [7, -2],
  tags: ['vip', 'é'],
  attributes: { a: 'b' },
  pager: 5551234,
};

describe('protobufSerde with .proto text schemas', () => {
  it('protects mapped fields (nested, repeated, packed, oneof, enum), keeps every other byte and unknown fields, and registers a retyped clean schema', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(PROTO);
    const serde = protobufSerde({ registry, protectedPaths: PATHS });
    const unknown = Buffer.from([0xf8, 0x06, 0x2a]); // field 111, varint 42: unknown to the schema
    const body = Buffer.concat([Buffer.from(Customer.encode(Customer.fromObject(customer)).finish()), unknown]);
    const out = await serde.protect(framed(rawId, body), protection(), 'clean');

    const { schemaId, indexes, bodyStart } = readFraming(out);
    expect(indexes).toEqual([1]);
    expect(registry.types.get(schemaId)).toBe('PROTOBUF');
    const cleanText = registry.schemas.get(schemaId)!;
    expect(cleanText).toContain('string number = 1;');
    expect(cleanText).toContain('/* the PAN, as a number */');
    expect(cleanText).toContain('repeated string scores = 6 [deprecated = true];');
    expect(cleanText).toContain('oneof contact { string phone = 9; string pager = 10; }');
    expect(cleanText).toContain('string level = 5;');
    expect(cleanText).toContain('int64 id = 1;');
    // nothing else changed: comments, options, other messages, spacing
    expect(cleanText).toBe(
      PROTO.replace('fixed64 number = 1', 'string number = 1')
        .replace('Level level = 5', 'string level = 5')
        .replace('repeated int32 scores = 6 [packed = true, deprecated = true]', 'repeated string scores = 6 [deprecated = true]')
        .replace('int64 pager = 10', 'string pager = 10'),
    );

    const clean = protobuf.parse(cleanText, { keepCase: true }).root.lookupType('shop.v1.Customer');
    const decoded = clean.toObject(clean.decode(out.subarray(bodyStart)), { longs: String, enums: String, oneofs: true }) as Record<string, unknown>;
    expect(decoded).toMatchObject({
      id: '42',
      email: 'tok(ada@example.com)',
      level: 'tok(GOLD)',
      scores: ['tok(7)', 'tok(-2)'],
      tags: ['tok(vip)', 'tok(é)'],
      cards: [
        { number: 'tok(4111111111111111)', brand: 'visa' },
        { number: 'tok(5500000000000004)', brand: 'mc' },
      ],
      profile: { name: 'tok(Ada Lovelace)', tier: 3 },
      attributes: { a: 'b' },
      pager: 'tok(5551234)',
      contact: 'pager',
    });
    expect(out.subarray(out.length - unknown.length)).toEqual(unknown);
    // the unmapped id and attributes are the same bytes at the same place
    expect(out.subarray(bodyStart, bodyStart + 2)).toEqual(body.subarray(0, 2));
    expect(
      out.includes(
        Buffer.from(
          raw
            .lookupType('shop.v1.Customer')
            .encode({ attributes: { a: 'b' } })
            .finish(),
        ),
      ),
    ).toBe(true);

    // a steady stream: no more registry calls
    const calls = { ...registry.calls };
    await serde.protect(framed(rawId, body), protection(), 'clean');
    expect(registry.calls).toEqual(calls);
  });

  it('with every mapped field a string, the clean schema is the raw text itself', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(PROTO);
    const paths = ['email', 'profile.name'];
    const out = await protobufSerde({ registry, protectedPaths: paths }).protect(
      framed(rawId, Customer.encode(Customer.fromObject(customer)).finish()),
      protection('pass', paths),
      'clean',
    );
    expect(registry.schemas.get(readFraming(out).schemaId)).toBe(PROTO);
  });

  it('dead-letters what does not frame, does not decode, or does not fit, with stable codes and no value in the message', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(PROTO);
    const serde = protobufSerde({ registry, protectedPaths: PATHS });
    const code = async (bytes: Buffer, p = protection()) => {
      try {
        await serde.protect(bytes, p, 'clean');
        return 'ok';
      } catch (e) {
        expect(e).toBeInstanceOf(StreamError);
        expect((e as Error).message).not.toContain('ada@');
        return (e as StreamError).code;
      }
    };
    const good = Buffer.from(Customer.encode(Customer.fromObject(customer)).finish());
    expect(await code(Buffer.from([1, 0, 0, 0, 1, 0]))).toBe('RECORD_MALFORMED');
    expect(await code(Buffer.from([0, 0, 0]))).toBe('RECORD_MALFORMED');
    expect(await code(framed(rawId, good.subarray(0, good.length - 3)))).toBe('RECORD_MALFORMED');
    expect(await code(framed(rawId, Buffer.from([0x12, 0x02, 0xff, 0xfe])))).toBe('RECORD_MALFORMED'); // email not UTF-8
    expect(await code(framed(rawId, Buffer.from([0x10, 0x01])))).toBe('RECORD_MALFORMED'); // email as a varint
    expect(await code(framed(rawId, good, Buffer.from([2, 14])))).toBe('RECORD_MALFORMED'); // no message [7]
    expect(await code(framed(999, good))).toBe('SCHEMA_UNKNOWN');
    expect(await code(framed(rawId, Buffer.from([0x08, 0x01])), protection('dead-letter'))).toBe('FIELD_MISSING');
    const two = ['email', 'profile.name'];
    await expect(
      protobufSerde({ registry, protectedPaths: two }).protect(framed(rawId, good), protection('dead-letter', two), 'clean'),
    ).resolves.toBeInstanceOf(Buffer);
  });

  it('refuses paths the schema contradicts, and retyping a message type used twice', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(PROTO);
    const body = framed(rawId, Customer.encode(Customer.fromObject(customer)).finish());
    const message = async (paths: string[]) => {
      try {
        await protobufSerde({ registry, protectedPaths: paths }).protect(body, protection('pass', paths), 'clean');
        return 'ok';
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(await message(['cards.number'])).toMatch(/repeated, write cards\[\]/);
    expect(await message(['email.x'])).toMatch(/email is a string field/);
    expect(await message(['profile'])).toMatch(/ends at a message field/);
    expect(await message(['attributes.a'])).toMatch(/map field/);
    expect(await message(['email', 'nickname', 'profile.middle'])).toMatch(/has no field at the mapped path nickname/);
    const shared = PROTO.replace('Profile profile = 4;', 'Profile profile = 4; Card backup = 11;');
    const sharedId = registry.add(shared);
    const sharedBody = framed(sharedId, Customer.encode(Customer.fromObject(customer)).finish());
    await expect(
      protobufSerde({ registry, protectedPaths: ['cards[].number'] }).protect(sharedBody, protection('pass', ['cards[].number']), 'clean'),
    ).rejects.toThrow(/Card is used in more than one place/);
  });

  it('refuses a schema version without a mapped path (a typo, the .proto name exp_month written expMonth, an older version): SCHEMA_PATH_UNKNOWN with the path, in mapping order', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(PROTO);
    const body = framed(rawId, Customer.encode(Customer.fromObject(customer)).finish());
    for (const [paths, path] of [
      [['email', 'cards[].expMonth', 'nickname'], 'cards[].expMonth'],
      [['Email'], 'Email'],
      [['profile.name', 'profile.middle'], 'profile.middle'],
    ] as const) {
      const serde = protobufSerde({ registry, protectedPaths: paths });
      const e = await serde.protect(body, protection('pass', [...paths]), 'clean').then(
        () => undefined,
        (err: unknown) => err as StreamError,
      );
      expect([e?.code, e?.path, e?.schema]).toEqual(['SCHEMA_PATH_UNKNOWN', path, rawId]);
      expect(e?.message).not.toContain('ada@');
      const [many] = await serde.protectMany!([body], protection('pass', [...paths]), ['clean']);
      expect([(many as StreamError).code, (many as StreamError).path]).toEqual(['SCHEMA_PATH_UNKNOWN', path]);
    }
  });

  it('protectMany gives each record what protect gives it, with the values of a batch protected together', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(PROTO);
    // phone is the oneof member these records do not set: not mapped here, where absent fields dead-letter
    const paths = PATHS.filter((x) => x !== 'phone');
    const serde = protobufSerde({ registry, protectedPaths: paths });
    let batches = 0;
    const refuse = (v: string) => {
      if (v.includes('refused')) throw new ValueError('VALUE_NOT_IN_ALPHABET', 'is refused');
      return `tok(${v})`;
    };
    const chain = Object.assign(chainFrom(refuse), {
      many: (values: readonly string[]) => {
        batches++;
        return chainFrom(refuse).many(values);
      },
    });
    const p = {
      maps: mappings(
        paths,
        paths.map(() => chain),
      ),
      missing: 'dead-letter' as const,
    };
    const rec = (o: object) => framed(rawId, Customer.encode(Customer.fromObject({ ...customer, ...o })).finish());
    const values = [
      rec({}),
      Buffer.from([1, 2, 3]),
      rec({ email: 'refused@example.com' }),
      rec({ tags: [] }),
      framed(rawId, Buffer.from([0x12, 0x02, 0xff, 0xfe])),
      rec({ profile: { name: 'B', tier: 1 } }),
      rec({ email: undefined }),
    ];
    const one = await Promise.all(
      values.map((v) =>
        serde
          .protect(
            v,
            {
              ...p,
              maps: mappings(
                paths,
                paths.map(() => chainFrom(refuse)),
              ),
            },
            'clean',
          )
          .catch((e: StreamError) => e.code),
      ),
    );
    batches = 0;
    const many = (
      await serde.protectMany!(
        values,
        p,
        values.map(() => 'clean'),
      )
    ).map((r) => (r instanceof StreamError ? r.code : r));
    expect(many).toEqual(one);
    expect(one.map((r) => (typeof r === 'string' ? r : 'ok'))).toEqual([
      'ok',
      'RECORD_MALFORMED',
      'VALUE_NOT_IN_ALPHABET',
      'ok',
      'RECORD_MALFORMED',
      'ok',
      'FIELD_MISSING',
    ]);
    // one batch per mapped path, whatever the number of records
    expect(batches).toBe(paths.length);
  });

  it('protectMany names the paths protected in each record (veil.protected.fields), records dead-lettered before and between them', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(PROTO);
    const serde = protobufSerde({ registry, protectedPaths: PATHS });
    const rec = (o: object) => framed(rawId, Customer.encode(Customer.fromObject({ id: 1, ...o })).finish());
    const broken = framed(rawId, Buffer.from([0x12, 0x02, 0xff, 0xfe]));
    const values = [
      broken,
      rec({ email: 'a@example.com', tags: ['x', 'y'] }),
      broken,
      rec({ profile: { name: 'N' }, pager: 5551234 }),
      rec({}),
      rec({ cards: [{ number: '4111' }, { number: '5500' }], email: 'b@example.com' }),
    ];
    const fields: (string | undefined)[] = [];
    const out = await serde.protectMany!(
      values,
      protection('pass'),
      values.map(() => 'clean'),
      fields,
    );
    expect(out.map((r) => (r instanceof StreamError ? r.code : 'ok'))).toEqual(['RECORD_MALFORMED', 'ok', 'RECORD_MALFORMED', 'ok', 'ok', 'ok']);
    expect([fields[1], fields[3], fields[4], fields[5]]).toEqual(['email,tags[]', 'profile.name,pager', '', 'email,cards[].number']);
    const decode = (r: Buffer | StreamError) => {
      if (!(r instanceof Buffer)) return undefined;
      const { schemaId, bodyStart } = readFraming(r);
      const clean = protobuf.parse(registry.schemas.get(schemaId)!, { keepCase: true }).root.lookupType('shop.v1.Customer');
      return clean.toObject(clean.decode(r.subarray(bodyStart)), { longs: String }) as Record<string, unknown>;
    };
    const decoded = out.map(decode);
    expect(decoded[1]).toMatchObject({ email: 'tok(a@example.com)', tags: ['tok(x)', 'tok(y)'] });
    expect(decoded[5]).toMatchObject({ email: 'tok(b@example.com)', cards: [{ number: 'tok(4111)' }, { number: 'tok(5500)' }] });
  });

  it('never throws anything but a StreamError on arbitrary bytes', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(PROTO);
    const serde = protobufSerde({ registry, protectedPaths: PATHS });
    const good = Buffer.from(Customer.encode(Customer.fromObject(customer)).finish());
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 2000; i++) {
      const b = Buffer.from(good);
      for (let k = 0; k < 1 + Math.floor(rand() * 4); k++) b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256);
      await serde
        .protect(framed(rawId, b.subarray(0, Math.floor(rand() * b.length) + 1)), protection(), 'clean')
        .catch((e) => expect(e).toBeInstanceOf(StreamError));
    }
  });
});

// what confluent-kafka-python 2.16.1's ProtobufSerializer registered (base64 FileDescriptorProto)
// and wrote for Customer(id=7, email='a@b.c', cards=[Card('4111','visa')], profile=Profile('N', 2))
const PY_SCHEMA =
  'Cg5jdXN0b21lci5wcm90bxIEZGVtbyIlCgRDYXJkEg4KBm51bWJlchgBIAEoCRINCgVicmFuZBgCIAEoCSKQAQoIQ3VzdG9tZXISCgoCaWQYASABKAMSDQoFZW1haWwYAiABKAkSGQoFY2FyZHMYAyADKAsyCi5kZW1vLkNhcmQSJwoHcHJvZmlsZRgEIAEoCzIWLmRlbW8uQ3VzdG9tZXIuUHJvZmlsZRolCgdQcm9maWxlEgwKBG5hbWUYASABKAkSDAoEdGllchgCIAEoBWIGcHJvdG8z';
const PY_RECORD = '00000000010202080712056140622e631a0c0a043431313112047669736122050a014e1002';

describe('protobufSerde with serialized FileDescriptorProto schemas (confluent-kafka-python)', () => {
  it('protects a record Python wrote and derives a descriptor whose retyped field is a string', async () => {
    const registry = new FakeRegistry();
    registry.schemas.set(1, PY_SCHEMA);
    const paths = ['id', 'email', 'cards[].number', 'profile.name'];
    const out = await protobufSerde({ registry, protectedPaths: paths }).protect(Buffer.from(PY_RECORD, 'hex'), protection('pass', paths), 'clean');
    const { schemaId, indexes, bodyStart } = readFraming(out);
    expect(indexes).toEqual([1]);
    const file = descriptor.FileDescriptorProto.decode(Buffer.from(registry.schemas.get(schemaId)!, 'base64'));
    const root = (protobuf.Root as unknown as { fromDescriptor(d: unknown): protobuf.Root }).fromDescriptor({ file: [file] });
    const clean = root.lookupType('demo.Customer');
    expect(clean.fields.id!.type).toBe('string');
    expect(clean.fields.id!.id).toBe(1);
    expect(clean.toObject(clean.decode(out.subarray(bodyStart)))).toEqual({
      id: 'tok(7)',
      email: 'tok(a@b.c)',
      cards: [{ number: 'tok(4111)', brand: 'visa' }],
      profile: { name: 'tok(N)', tier: 2 },
    });
  });
});
