import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { kafkajsCopies } from '../helpers/patched-kafkajs.ts';

/**
 * veil's kafkajs patch, protocol parts: record headers (patches/kafkajs/02-record-headers.patch)
 * and OffsetFetch v7 with require_stable (03-offset-fetch-v7.patch), on the bytes.
 */

const copies = kafkajsCopies();
afterAll(() => copies.remove());
const load = (path: string, dir = copies.patched) => copies.load(dir, path);

interface Header {
  key: string;
  value: Buffer | null;
}
type Headers = Header[] | Record<string, Buffer | string | null | (Buffer | string | null)[]>;

/** Encodes one record with these headers in a record batch, and decodes it back as a consumer does. */
async function roundTrip(headers: Headers, dir = copies.patched): Promise<{ headers: Record<string, unknown>; headerList: Header[] }> {
  const Record = load('src/protocol/recordBatch/record/v0/index.js', dir) as (r: object) => object;
  const { RecordBatch } = load('src/protocol/recordBatch/v0/index.js', dir) as { RecordBatch: (b: object) => Promise<{ buffer: Buffer }> };
  const Decoder = load('src/protocol/decoder.js', dir) as new (b: Buffer) => unknown;
  const decodeMessages = load('src/protocol/requests/fetch/v4/decodeMessages.js', dir) as (
    d: unknown,
  ) => Promise<{ headers: Record<string, unknown>; headerList: Header[] }[]>;
  const batch = Buffer.from((await RecordBatch({ records: [Record({ key: Buffer.from('k'), value: Buffer.from('v'), headers })] })).buffer);
  const size = Buffer.alloc(4);
  size.writeInt32BE(batch.length);
  const [message] = await decodeMessages(new Decoder(Buffer.concat([size, batch])));
  return message!;
}

describe('kafkajs record headers (patched)', () => {
  it('an ordered header list comes back exactly: interleaved and repeated keys, null, empty and binary values', async () => {
    const headers: Header[] = [
      { key: 'a', value: Buffer.from('1') },
      { key: 'n', value: null },
      { key: 'a', value: Buffer.from('2') },
      { key: '1', value: Buffer.from([0, 0xff, 0x80]) },
      { key: '', value: Buffer.alloc(0) },
      { key: 'n', value: null },
    ];
    const decoded = await roundTrip(headers);
    expect(decoded.headerList).toEqual(headers);
    // the grouped object kafkajs always offered is still there
    expect(decoded.headers.n).toEqual([null, null]);
    expect(decoded.headers.a).toEqual([Buffer.from('1'), Buffer.from('2')]);
  });

  it("a null value in kafkajs' header object is written as null (upstream 2.2.4 throws)", async () => {
    expect((await roundTrip({ n: null, s: 'x' })).headerList).toEqual([
      { key: 'n', value: null },
      { key: 's', value: Buffer.from('x') },
    ]);
    await expect(roundTrip({ n: null }, copies.upstream)).rejects.toThrow(TypeError);
  });

  it('any header list round-trips byte for byte', async () => {
    const header = fc.record({
      key: fc.string({ unit: 'binary', maxLength: 8 }),
      value: fc.option(
        fc.uint8Array({ maxLength: 16 }).map((a) => Buffer.from(a)),
        { nil: null },
      ),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(header, { maxLength: 12 }), async (headers) => {
        expect((await roundTrip(headers)).headerList).toEqual(headers);
      }),
      { numRuns: 200 },
    );
  });
});

interface Protocol {
  request: { apiVersion: number; encode(): Promise<{ buffer: Buffer }> };
  response: { decode(b: Buffer): Promise<unknown>; parse(d: unknown): Promise<unknown> };
  logResponseError?: boolean;
}
type Versions = { versions: string[]; protocol(o: { version: number }): (o: object) => Protocol };

describe('kafkajs OffsetFetch v7 (patched)', () => {
  const OffsetFetch = () => load('src/protocol/requests/offsetFetch/index.js') as Versions;
  const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

  it("encodes require_stable after the topics, in flexible framing (the request header's tagged fields first)", async () => {
    const { request, logResponseError } = OffsetFetch().protocol({ version: 7 })({
      groupId: 'g',
      topics: [{ topic: 't', partitions: [{ partition: 3 }, { partition: 4 }] }],
      requireStable: true,
    });
    expect(request.apiVersion).toBe(7);
    // header tags | "g" | 1 topic: "t", 2 partitions 3 and 4, topic tags | require_stable | tags
    expect((await request.encode()).buffer).toEqual(hex('00 0267 02 0274 03 00000003 00000004 00 01 00'));
    // an UNSTABLE_OFFSET_COMMIT the caller retries is not logged as a failure
    expect(logResponseError).toBe(false);
    const plain = OffsetFetch().protocol({ version: 7 })({ groupId: 'g', topics: [] });
    expect((await plain.request.encode()).buffer).toEqual(hex('00 0267 00 00 00'));
    expect(plain.logResponseError).toBe(true);
  });

  it("decodes the response (tagged fields skipped by their size) into the earlier versions' shape; an unstable partition is a retriable error", async () => {
    const { response } = OffsetFetch().protocol({ version: 7 })({ groupId: 'g', topics: [], requireStable: true });
    const body = hex(`
      01 05 03 aabbcc
      00000064
      02 0274 03
        00000003 000000000000002a ffffffff 00 0000 00
        00000004 ffffffffffffffff ffffffff 01 0058 01 00 02 ffff
      00
      0000 00`);
    const decoded = await response.decode(body);
    expect(decoded).toEqual({
      throttleTime: 0,
      clientSideThrottleTime: 100,
      errorCode: 0,
      responses: [
        {
          topic: 't',
          partitions: [
            { partition: 3, offset: '42', leaderEpoch: -1, metadata: null, errorCode: 0 },
            { partition: 4, offset: '-1', leaderEpoch: -1, metadata: '', errorCode: 88 },
          ],
        },
      ],
    });
    await expect(response.parse(decoded)).rejects.toMatchObject({ name: 'KafkaJSProtocolError', type: 'UNSTABLE_OFFSET_COMMIT', retriable: true });
  });

  it('is chosen for any broker that serves v7; requireStable on an older broker is an error, never a silent unstable read', async () => {
    const { lookup } = load('src/protocol/requests/index.js') as { lookup: (v: object) => (key: number, def: Versions) => (o: object) => Protocol };
    const broker = (max: number) => lookup({ 9: { minVersion: 0, maxVersion: max } })(9, OffsetFetch());
    expect(broker(9)({ groupId: 'g', topics: [], requireStable: true }).request.apiVersion).toBe(7);
    for (const max of [5, 6]) expect(broker(max)({ groupId: 'g', topics: [] }).request.apiVersion).toBe(4);
    for (const max of [4, 6])
      expect(() => broker(max)({ groupId: 'g', topics: [], requireStable: true })).toThrow(/requireStable needs a broker that supports OffsetFetch v7/);
  });
});
