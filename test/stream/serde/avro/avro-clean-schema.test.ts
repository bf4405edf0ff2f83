import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { avscSchema, deriveCleanSchema, unknownAvroPaths } from '../../../../src/stream/serde/avro/avro-clean-schema.ts';
import { StreamError } from '../../../../src/stream/stream-error.ts';
import { avroType } from '../../../../src/stream/serde/avro/avro-types.ts';
import { arrayOf, avroField, avroRecord, mapOf, nullable } from '../../../helpers/avro-schema.ts';

type Obj = Record<string, unknown>;

/** derives, checks that avsc accepts the result, and returns it parsed */
function derive(schema: unknown, paths: string[]): Obj {
  const text = deriveCleanSchema(JSON.stringify(schema), paths);
  avro.Type.forSchema(JSON.parse(text));
  return JSON.parse(text) as Obj;
}

const field = (record: Obj, name: string) => (record.fields as Obj[]).find((f) => f.name === name)!;

const address = avroRecord('Address', { postcode: avroField('int', { default: 1000 }), city: 'string' });
const person = avroRecord(
  'Person',
  {
    name: 'string',
    age: nullable('int'),
    home: avroField(address, { default: { postcode: 1234, city: 'Bern' } }),
    work: nullable('Address'),
    cards: arrayOf(avroRecord('Card', { number: 'long', kind: { type: 'enum', name: 'Kind', symbols: ['DEBIT', 'CREDIT'] } })),
    tags: avroField(arrayOf(['int', 'null']), { default: [1, 2] }),
    attributes: mapOf('long'),
  },
  'acme',
);

describe('deriveCleanSchema', () => {
  it('makes a field of a nested record a string and leaves the rest as it was', () => {
    const clean = derive(avroRecord('R', { id: 'long', address: { ...address } }), ['address.postcode']);
    expect(field(clean, 'id')).toEqual({ name: 'id', type: 'long' });
    const addr = field(clean, 'address').type as Obj;
    expect(addr.name).toBe('Address');
    expect(field(addr, 'postcode')).toEqual({ name: 'postcode', type: 'string', default: '1000' });
    expect(field(addr, 'city')).toEqual({ name: 'city', type: 'string' });
  });

  it('walks arrays of records with []', () => {
    const clean = derive(person, ['cards[].number']);
    const card = (field(clean, 'cards').type as Obj).items as Obj;
    expect(field(card, 'number').type).toBe('string');
    expect((field(card, 'kind').type as Obj).type).toBe('enum');
  });

  it('protects the elements of an array of scalars, nullable elements keeping null, and converts the default', () => {
    const clean = derive(person, ['tags[]']);
    expect(field(clean, 'tags')).toEqual({ name: 'tags', type: { type: 'array', items: ['string', 'null'] }, default: ['1', '2'] });
  });

  it('walks nullable unions and keeps their null branch and default', () => {
    const clean = derive(person, ['work.postcode', 'age']);
    expect(field(clean, 'age')).toEqual({ name: 'age', type: ['null', 'string'], default: null });
    const work = field(clean, 'work');
    expect(work.default).toBeNull();
    const [nul, rec] = work.type as [string, Obj | string];
    expect(nul).toBe('null');
    // Address is defined (unmodified) at home, so work gets a renamed, modified copy
    expect(typeof rec).toBe('object');
    expect(field(rec as Obj, 'postcode').type).toBe('string');
  });

  it('keeps a union branch order: string takes the place of the first non-null branch', () => {
    const schema = {
      type: 'record',
      name: 'R',
      fields: [
        { name: 'a', type: ['int', 'null'], default: 5 },
        { name: 'b', type: ['null', 'int', 'string'], default: null },
        { name: 'c', type: ['boolean', 'null'], default: true },
        { name: 'd', type: ['string', 'null'], default: 'x' },
      ],
    };
    const clean = derive(schema, ['a', 'b', 'c', 'd']);
    expect(clean.fields).toEqual([
      { name: 'a', type: ['string', 'null'], default: '5' },
      { name: 'b', type: ['null', 'string'], default: null },
      { name: 'c', type: ['string', 'null'], default: 'true' },
      { name: 'd', type: ['string', 'null'], default: 'x' },
    ]);
  });

  it('keeps nested defaults valid: a record default along a path is converted inside', () => {
    const clean = derive(person, ['home.postcode']);
    expect(field(clean, 'home').default).toEqual({ postcode: '1234', city: 'Bern' });
    // avsc accepts the default for the clean type and fills it in
    const type = avro.Type.forSchema(clean as avro.Schema);
    const home = (type as unknown as { fields: { name: string; defaultValue(): unknown }[] }).fields.find((f) => f.name === 'home')!;
    expect(home.defaultValue()).toMatchObject({ postcode: '1234', city: 'Bern' });
  });

  it('turns enums and logical types into plain strings', () => {
    const schema = avroRecord('R', {
      kind: avroField({ type: 'enum', name: 'Kind', symbols: ['A', 'B'] }, { default: 'A' }),
      at: { type: 'long', logicalType: 'timestamp-millis' },
      id: { type: 'string', logicalType: 'uuid' },
    });
    const clean = derive(schema, ['kind', 'at', 'id']);
    expect(clean.fields).toEqual([
      { name: 'kind', type: 'string', default: 'A' },
      { name: 'at', type: 'string' },
      { name: 'id', type: 'string' },
    ]);
  });

  describe('named types used more than once', () => {
    it('modifies a shared type in place when every use is protected alike', () => {
      const clean = derive(person, ['home.postcode', 'work.postcode']);
      const home = field(clean, 'home').type as Obj;
      expect(home.name).toBe('Address');
      expect(field(home, 'postcode').type).toBe('string');
      expect(field(clean, 'work').type).toEqual(['null', 'acme.Address']);
      expect(JSON.stringify(clean).match(/"name":"Address"/g)).toHaveLength(1);
    });

    it('gives a copy protected differently its own stable name and leaves the other use as it was', () => {
      const clean = derive(person, ['home.postcode']);
      const home = field(clean, 'home').type as Obj;
      expect(home.name).toMatch(/^Address_[0-9a-f]{8}$/);
      expect(field(home, 'postcode').type).toBe('string');
      const work = (field(clean, 'work').type as [string, Obj])[1];
      expect(work).toMatchObject({ type: 'record', name: 'Address', namespace: 'acme' });
      expect(field(work, 'postcode')).toEqual({ name: 'postcode', type: 'int', default: 1000 });
      // the same paths give the same name in a later schema version
      const v2 = derive({ ...person, fields: [...person.fields, { name: 'note', type: ['null', 'string'], default: null }] }, ['home.postcode']);
      expect((field(v2, 'home').type as Obj).name).toBe(home.name);
      // values flow: the copy and the original both decode and encode
      const type = avro.Type.forSchema(clean as avro.Schema, { wrapUnions: 'auto' });
      const value = {
        name: 'n',
        age: null,
        home: { postcode: 'tok', city: 'Bern' },
        work: { postcode: 3000, city: 'Thun' },
        cards: [],
        tags: [],
        attributes: {},
      };
      expect(type.fromBuffer(type.toBuffer(value))).toMatchObject(value);
    });

    it('resolves short references and other namespaces, and writes each type once, where it is first used', () => {
      const schema = avroRecord(
        'Order',
        {
          billing: avroRecord('Address', { zip: 'int' }, 'geo'),
          shipping: 'geo.Address',
          lines: arrayOf(avroRecord('Line', { sku: 'int', to: 'geo.Address' })),
          first: 'Line',
        },
        'shop',
      );
      const clean = derive(schema, ['billing.zip', 'first.sku']);
      const billing = field(clean, 'billing').type as Obj;
      expect(billing).toMatchObject({ name: expect.stringMatching(/^Address_/), namespace: 'geo' });
      // the original Address now first appears at shipping, written in full with its namespace
      expect(field(clean, 'shipping').type).toMatchObject({ type: 'record', name: 'Address', namespace: 'geo' });
      const line = (field(clean, 'lines').type as Obj).items as Obj;
      expect(line).toMatchObject({ name: 'Line', namespace: 'shop' });
      expect(field(line, 'to').type).toBe('geo.Address');
      expect(field(line, 'sku').type).toBe('int');
      expect(field(clean, 'first').type).toMatchObject({ name: expect.stringMatching(/^Line_/), namespace: 'shop' });
    });

    it('ends on recursive types', () => {
      const node = avroRecord('Node', { value: 'int', next: nullable('Node') });
      const clean = derive(node, ['value', 'next.value']);
      expect(field(clean, 'value').type).toBe('string');
      const next = (field(clean, 'next').type as [string, Obj])[1];
      expect(field(next, 'value').type).toBe('string');
      // deeper nodes are the original Node
      expect(field(next, 'next').type).toEqual(['null', avroRecord('Node', { value: 'int', next: nullable('Node') })]);
    });
  });

  it('changes nothing for a protected field that is a string already', () => {
    const clean = derive(person, ['name']);
    expect(avro.Type.forSchema(clean as avro.Schema).equals(avro.Type.forSchema(person as avro.Schema))).toBe(true);
  });

  it('skips paths to fields the schema lacks when asked to (an older schema version), and only those', () => {
    const text = JSON.stringify(person);
    const clean = JSON.parse(deriveCleanSchema(text, ['phone', 'home.country', 'cards[].cvc', 'home.postcode'], { absent: 'skip' })) as Obj;
    expect(clean).toEqual(JSON.parse(deriveCleanSchema(text, ['home.postcode'])));
    expect(() => deriveCleanSchema(text, ['name.first'], { absent: 'skip' })).toThrow(/name is a string, not a record/);
  });

  it('names the path a schema lacks (unknownPath: the serde refuses the schema, SCHEMA_PATH_UNKNOWN), and lists every such path in mapping order', () => {
    const text = JSON.stringify(person);
    const e = (() => {
      try {
        deriveCleanSchema(text, ['home.postcode', 'cards[].cvc']);
      } catch (err) {
        return err as StreamError;
      }
    })();
    expect(e?.code).toBe('SCHEMA_PATH_UNKNOWN');
    expect(e?.path).toBe('cards[].cvc');
    expect(unknownAvroPaths(text, ['phone', 'home.postcode', 'Name', 'name.first', 'cards[].cvc'])).toEqual(['phone', 'Name', 'cards[].cvc']);
    // a shape error is no unknown path
    expect(() => deriveCleanSchema(text, ['name.first'])).toThrow(expect.objectContaining({ code: 'RECORD_MALFORMED', path: undefined }));
  });

  it('is deterministic', () => {
    expect(deriveCleanSchema(JSON.stringify(person), ['home.postcode', 'tags[]'])).toBe(deriveCleanSchema(JSON.stringify(person), ['tags[]', 'home.postcode']));
  });

  describe('refuses paths the schema does not fit, naming the path', () => {
    const cases: [string, RegExp][] = [
      ['nope', /^nope: record acme.Person has no field nope$/],
      ['home.nope', /^home.nope: record acme.Address has no field nope$/],
      ['name.first', /^name.first: name is a string, not a record$/],
      ['cards.number', /^cards.number: cards is an array; write cards\[\] to walk its elements$/],
      ['tags', /tags is an array; only a scalar .* \(write tags\[\] to protect its elements\)/],
      ['home', /home is record acme.Address; only a scalar/],
      ['cards[].kind.x', /cards\[\].kind is enum acme.Kind, not a record/],
      ['attributes.x', /attributes is a map/],
      ['home[].city', /home is record acme.Address, not an array/],
      ['bad path', /not a record path/],
    ];
    for (const [path, message] of cases) {
      it(path, () => {
        expect(() => deriveCleanSchema(JSON.stringify(person), [path])).toThrow(StreamError);
        expect(() => deriveCleanSchema(JSON.stringify(person), [path])).toThrow(message);
      });
    }

    it('unions that are not nullable, non-scalar and ambiguous leaves, bytes', () => {
      const schema = avroRecord('R', {
        either: [avroRecord('A', { x: 'int' }), avroRecord('B', { x: 'int' })],
        num: ['null', 'int', 'long'],
        blob: 'bytes',
        maybe: ['null', 'A'],
      });
      const text = JSON.stringify(schema);
      expect(() => deriveCleanSchema(text, ['either.x'])).toThrow(/either is a union of 2 non-null types; paths walk through nullable unions/);
      expect(() => deriveCleanSchema(text, ['num'])).toThrow(/num is a union of types that decode to the same kind of value \(a int, a long\)/);
      expect(() => deriveCleanSchema(text, ['blob'])).toThrow(/blob is a bytes; only a scalar/);
      expect(() => deriveCleanSchema(text, ['maybe'])).toThrow(/maybe is a union with a non-scalar type/);
    });

    it('a schema that is not JSON', () => {
      expect(() => deriveCleanSchema('syntax = "proto3";', ['a'])).toThrow(/not JSON/);
    });
  });
});

describe('deriveCleanSchema keeps every number as written', () => {
  const I64_MAX = '9223372036854775807'; // JSON.parse: 9223372036854775808 (2^63, out of a long's range)
  const I64_MIN = '-9223372036854775808';
  const ODD = '9007199254740993'; // JSON.parse: 9007199254740992
  // compact, every named type with its namespace: the clean text of no path is this text exactly
  const field = {
    id: `{"name":"id","type":"long","default":${I64_MAX}}`,
    serial: `{"name":"serial","type":"long","default":${ODD}}`,
    ratio: '{"name":"ratio","type":"double","default":1.0}',
    huge: '{"name":"huge","type":"double","default":1e400}',
    limits: `{"name":"limits","type":{"type":"record","name":"Limits","namespace":"acme","fields":[{"name":"max","type":"long","default":${I64_MIN}},{"name":"step","type":"double","default":0.10}]},"default":{"max":${I64_MAX},"step":0.10}}`,
    history: `{"name":"history","type":{"type":"array","items":"long"},"default":[${ODD},${I64_MIN}]}`,
    counters: `{"name":"counters","type":{"type":"map","values":"long"},"default":{"a":${ODD},"b":-0}}`,
    nested: `{"name":"nested","type":{"type":"array","items":{"type":"map","values":{"type":"record","name":"Point","namespace":"acme","fields":[{"name":"x","type":"long"},{"name":"y","type":"double"}]}}},"default":[{"p":{"x":${I64_MAX},"y":-0.0}}]}`,
    maybe: `{"name":"maybe","type":["long","null"],"default":${I64_MAX}}`,
    amount: '{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":38,"scale":9}}',
    hash: '{"name":"hash","type":{"type":"fixed","name":"Hash","namespace":"acme","size":16}}',
  };
  const schemaText = (f: Record<string, string>) => `{"type":"record","name":"Account","namespace":"acme","fields":[${Object.values(f).join(',')}]}`;
  const RAW = schemaText(field);

  it('with no path to protect, the clean text is the raw text byte for byte', () => {
    expect(deriveCleanSchema(RAW, [])).toBe(RAW);
    expect(deriveCleanSchema(RAW, ['absent'], { absent: 'skip' })).toBe(RAW);
  });

  it('long defaults beyond 2^53 (record fields, nested records, arrays, maps, unions) keep their digits; a protected one becomes its text', () => {
    const clean = deriveCleanSchema(RAW, ['id', 'ratio', 'limits.max', 'history[]', 'maybe']);
    expect(clean).toBe(
      schemaText({
        ...field,
        id: `{"name":"id","type":"string","default":"${I64_MAX}"}`,
        ratio: '{"name":"ratio","type":"string","default":"1.0"}',
        limits: `{"name":"limits","type":{"type":"record","name":"Limits","namespace":"acme","fields":[{"name":"max","type":"string","default":"${I64_MIN}"},{"name":"step","type":"double","default":0.10}]},"default":{"max":"${I64_MAX}","step":0.10}}`,
        history: `{"name":"history","type":{"type":"array","items":"string"},"default":["${ODD}","${I64_MIN}"]}`,
        maybe: `{"name":"maybe","type":["string","null"],"default":"${I64_MAX}"}`,
      }),
    );
  });

  it("avsc reads raw and clean schemas with long defaults up to 2^63 − 1 exactly (the registered text is not avsc's)", () => {
    const clean = deriveCleanSchema(RAW, ['id', 'limits.max']);
    for (const text of [RAW, clean]) {
      const type = avroType(avscSchema(text)) as avro.types.RecordType;
      const defaults = Object.fromEntries(type.fields.map((f) => [f.name, f.defaultValue() as unknown]));
      expect(defaults.serial).toBe(9007199254740993n);
      expect(defaults.history).toEqual([9007199254740993n, -9223372036854775808n]);
      expect(defaults.maybe).toBe(9223372036854775807n);
      expect(defaults.huge).toBe(Infinity);
      expect((defaults.counters as { key: string; value: unknown }[]).map((e) => [e.key, e.value])).toEqual([
        ['a', 9007199254740993n],
        ['b', -0],
      ]);
      expect((defaults.nested as { key: string; value: { x: unknown } }[][])[0]![0]!.value.x).toBe(9223372036854775807n);
    }
    const rawDefaults = (avroType(avscSchema(RAW)) as avro.types.RecordType).fields;
    expect(rawDefaults[0]!.defaultValue()).toBe(9223372036854775807n);
    // avsc with JSON.parse's numbers refuses the same schema (2^63 is no long)
    expect(() => avroType(JSON.parse(RAW))).toThrow();
    // a record writes and reads back with the clean type
    const cleanType = avroType(avscSchema(clean));
    const value = cleanType.fromBuffer(
      cleanType.toBuffer({
        id: 'tok',
        serial: 9007199254740993n,
        ratio: 0.5,
        huge: 1,
        limits: { max: 'tok', step: 0.1 },
        history: [1],
        counters: [{ key: 'k', value: 2n ** 62n }],
        nested: [],
        maybe: null,
        amount: Buffer.from([1]),
        hash: Buffer.alloc(16),
      }),
    ) as { serial: unknown; counters: { value: unknown }[] };
    expect(value.serial).toBe(9007199254740993n);
    expect(value.counters[0]!.value).toBe(2n ** 62n);
  });

  it('avscSchema is JSON.parse for what it cannot read as a schema, and throws on what is not JSON', () => {
    expect(avscSchema(`{"type":"record","fields":1.0,"x":${ODD}}`)).toEqual({ type: 'record', fields: 1, x: 9007199254740992 });
    expect(() => avscSchema('{')).toThrow(SyntaxError);
  });
});
