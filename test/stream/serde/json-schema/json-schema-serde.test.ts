import { describe, expect, it } from 'vitest';
import { chainFrom } from '../../../helpers/chain-from.ts';
import { mappings } from '../../../../src/stream/serde/field-mappings.ts';
import { deriveCleanJsonSchema } from '../../../../src/stream/serde/json-schema/json-schema-clean.ts';
import { jsonSchemaSerde } from '../../../../src/stream/serde/json-schema/json-schema-serde.ts';
import { StreamError } from '../../../../src/stream/stream-error.ts';
import { FakeRegistry } from '../fake-registry.ts';
import { confluentFrame } from '../../../helpers/confluent-frame.ts';

const rawSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  title: 'Customer',
  type: 'object',
  properties: {
    id: { type: 'integer' },
    email: { type: 'string', format: 'email', description: 'where we write' },
    nickname: { type: ['string', 'null'], maxLength: 8 },
    address: { type: 'object', properties: { postcode: { type: 'integer', minimum: 1000 }, city: { type: 'string' } } },
    cards: { type: 'array', items: { $ref: '#/$defs/Card' } },
    backup: { $ref: '#/$defs/Card' },
  },
  $defs: {
    Card: { type: 'object', properties: { number: { type: 'string', pattern: '^[0-9]{16}$' }, expiry: { type: 'string' } }, additionalProperties: false },
  },
  additionalProperties: true,
};
const PATHS = ['email', 'nickname', 'address.postcode', 'cards[].number'];
const protection = {
  maps: mappings(
    PATHS,
    PATHS.map(() => chainFrom((v: string) => `tok(${v})`)),
  ),
  missing: 'pass' as const,
};

function wire(id: number, json: string): Buffer {
  return confluentFrame(id, json);
}

describe('deriveCleanJsonSchema', () => {
  it('makes every protected value a string (null kept where allowed, title and description kept), inlines the references it crosses, and keeps the rest', () => {
    const clean = JSON.parse(deriveCleanJsonSchema(JSON.stringify(rawSchema), PATHS));
    expect(clean.properties.email).toEqual({ type: 'string', description: 'where we write' });
    expect(clean.properties.nickname).toEqual({ type: ['string', 'null'] });
    expect(clean.properties.address.properties.postcode).toEqual({ type: 'string' });
    expect(clean.properties.address.properties.city).toEqual({ type: 'string' });
    // cards' items inlined and changed; the definition and its other user (backup) untouched
    expect(clean.properties.cards.items.properties.number).toEqual({ type: 'string' });
    expect(clean.properties.cards.items.additionalProperties).toBe(false);
    expect(clean.properties.backup).toEqual({ $ref: '#/$defs/Card' });
    expect(clean.$defs.Card.properties.number.pattern).toBe('^[0-9]{16}$');
    expect(clean.$schema).toBe(rawSchema.$schema);
  });

  it('refuses paths through combinators or tuples, and references that are not local', () => {
    const withOneOf = { type: 'object', properties: { contact: { oneOf: [{ type: 'object', properties: { email: { type: 'string' } } }, { type: 'null' }] } } };
    expect(() => deriveCleanJsonSchema(JSON.stringify(withOneOf), ['contact.email'])).toThrow(StreamError);
    const tuple = { type: 'object', properties: { cards: { type: 'array', prefixItems: [{ type: 'object' }] } } };
    expect(() => deriveCleanJsonSchema(JSON.stringify(tuple), ['cards[].number'])).toThrow(/tuple/);
    const remote = { type: 'object', properties: { card: { $ref: 'https://example.com/card.json' } } };
    expect(() => deriveCleanJsonSchema(JSON.stringify(remote), ['card.number'])).toThrow(/not a local definition/);
    // a leaf that is a combinator simply becomes a string
    expect(JSON.parse(deriveCleanJsonSchema(JSON.stringify(withOneOf), ['contact'])).properties.contact).toEqual({ type: 'string' });
  });
});

describe('deriveCleanJsonSchema: every mapped path must be declared', () => {
  const schema = JSON.stringify({
    type: 'object',
    additionalProperties: true,
    properties: {
      Email: { type: 'string', 'confluent:tags': ['PII'] },
      email: { type: 'string' },
      cards: { type: 'array', items: { $ref: '#/definitions/Card' } },
      tags: { type: 'array' },
      profile: { type: 'object', properties: { name: { type: 'string' } } },
    },
    definitions: { Card: { type: 'object', properties: { number: { type: 'string' }, exp_month: { type: 'integer' } } } },
  });
  const unknown = (paths: string[], foldKeys = false) => {
    try {
      deriveCleanJsonSchema(schema, paths, { foldKeys });
      return undefined;
    } catch (e) {
      expect(e).toBeInstanceOf(StreamError);
      return (e as StreamError).code === 'SCHEMA_PATH_UNKNOWN' ? (e as StreamError).path : undefined;
    }
  };

  it('a path the schema does not declare is unknown, whatever additionalProperties allows; the first in mapping order is named', () => {
    expect(unknown(['email', 'cards[].number'])).toBeUndefined();
    expect(unknown(['email', 'cards[].expMonth', 'phone'])).toBe('cards[].expMonth');
    expect(unknown(['phone', 'cards[].expMonth'])).toBe('phone');
    expect(unknown(['profile.name.first'])).toBe('profile.name.first'); // a string has no properties
    expect(unknown(['cards.number'])).toBe('cards.number'); // an array walked without []
    expect(unknown(['tags[]'])).toBe('tags[]'); // an array without items declares no element
  });

  it('keys: insensitive reaches every property a step folds to and retypes each; exact matches as written; tags are kept on a retyped leaf', () => {
    expect(unknown(['EMAIL'])).toBe('EMAIL');
    expect(unknown(['EMAIL', 'Cards[].NUMBER'], true)).toBeUndefined();
    const clean = JSON.parse(deriveCleanJsonSchema(schema, ['EMAIL', 'cards[].exp_month'], { foldKeys: true }));
    expect(clean.properties.Email).toEqual({ type: 'string', 'confluent:tags': ['PII'] });
    expect(clean.properties.email).toEqual({ type: 'string' });
    expect(clean.properties.cards.items.properties.exp_month).toEqual({ type: 'string' });
  });
});

describe('jsonSchemaSerde', () => {
  it('protects the JSON text byte for byte outside the mapped values, behind the id of the clean schema registered as JSON for the clean topic', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(rawSchema);
    const serde = jsonSchemaSerde({ registry, protectedPaths: PATHS });
    const json =
      '{"id": 12345678901234567890, "email":"ann@example.com","nickname":null, "address":{"postcode":3011,"city":"Bern"},\n "cards":[{"number":"4111111111111111","expiry":"12/30"}], "x": 1.0e0}';
    const out = await serde.protect(wire(rawId, json), protection, 'clean.customers');
    expect(out[0]).toBe(0);
    const cleanId = out.readUInt32BE(1);
    expect(registry.types.get(cleanId)).toBe('JSON');
    expect(registry.latest('clean.customers-value')).toBe(deriveCleanJsonSchema(JSON.stringify(rawSchema), PATHS));
    expect(out.subarray(5).toString()).toBe(
      '{"id": 12345678901234567890, "email":"tok(ann@example.com)","nickname":null, "address":{"postcode":"tok(3011)","city":"Bern"},\n "cards":[{"number":"tok(4111111111111111)","expiry":"12/30"}], "x": 1.0e0}',
    );
    // a steady stream asks the registry nothing more
    const calls = { ...registry.calls };
    await serde.protect(wire(rawId, json), protection, 'clean.customers');
    expect(registry.calls).toEqual(calls);
  });

  it('dead-letters what it cannot read: no header, another magic byte, not JSON, an unknown schema, a schema the paths do not fit', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(rawSchema);
    const badId = registry.add(
      {
        type: 'object',
        properties: {
          email: { anyOf: [{ type: 'string' }] },
          nickname: { type: 'string' },
          address: { type: 'object', properties: { postcode: { type: 'integer' } } },
          cards: { type: 'array', prefixItems: [] },
        },
      },
      'other-value',
    );
    const serde = jsonSchemaSerde({ registry, protectedPaths: PATHS });
    const code = async (bytes: Buffer) =>
      (await serde.protect(bytes, protection, 'clean').then(
        () => undefined,
        (e: unknown) => e,
      )) as StreamError;
    expect((await code(Buffer.from([0, 0, 0]))).code).toBe('RECORD_MALFORMED');
    expect((await code(Buffer.concat([Buffer.from([1]), wire(rawId, '{}').subarray(1)]))).code).toBe('RECORD_MALFORMED');
    expect((await code(wire(rawId, '{"email": "a@b.c",'))).code).toBe('RECORD_MALFORMED');
    expect((await code(wire(999, '{}'))).code).toBe('SCHEMA_UNKNOWN');
    expect((await code(wire(badId, '{"email":"a@b.c"}'))).message).toMatch(
      /schema \d+ does not fit the pipeline's mapped paths: path cards\[\]\.number crosses a tuple/,
    );
    registry.down = true;
    expect((await code(wire(rawId + 1000, '{}'))).code).toBe('REGISTRY_UNAVAILABLE');
  });

  it('refuses the records of a schema that does not declare a mapped path: SCHEMA_PATH_UNKNOWN with the path and schema id, the registry asked once', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(rawSchema);
    const paths = ['email', 'cards[].expMonth'];
    const serde = jsonSchemaSerde({ registry, protectedPaths: paths });
    const p = {
      maps: mappings(
        paths,
        paths.map(() => chainFrom((v: string) => `tok(${v})`)),
      ),
      missing: 'pass' as const,
    };
    const bytes = wire(rawId, '{"email":"ann@example.com","cards":[{"number":"4111111111111111","expMonth":"12"}]}');
    const e = (await serde.protect(bytes, p, 'clean').then(
      () => undefined,
      (err: unknown) => err,
    )) as StreamError;
    expect([e.code, e.path, e.schema]).toEqual(['SCHEMA_PATH_UNKNOWN', 'cards[].expMonth', rawId]);
    expect(e.message).not.toContain('ann@');
    const many = await serde.protectMany!([bytes, bytes], p, ['clean', 'clean']);
    expect(many.map((r) => (r as StreamError).code)).toEqual(['SCHEMA_PATH_UNKNOWN', 'SCHEMA_PATH_UNKNOWN']);
    expect(registry.calls.schemaById).toBe(1);
    // keys: insensitive (the serde's foldKeys) reaches a property written in another case
    const folded = jsonSchemaSerde({ registry, protectedPaths: ['EMAIL'], foldKeys: true });
    const out = await folded.protect(
      wire(rawId, '{"email":"ann@example.com"}'),
      { maps: mappings(['EMAIL'], [chainFrom((v: string) => `tok(${v})`)]), missing: 'pass', foldKeys: true },
      'clean',
    );
    expect(out.subarray(5).toString()).toBe('{"email":"tok(ann@example.com)"}');
  });

  it('protectMany gives each record what protect gives it (validation included), and a registry outage fails the whole batch', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(rawSchema);
    const serde = jsonSchemaSerde({ registry, protectedPaths: PATHS });
    const p = { ...protection, validate: true };
    const values = [
      wire(rawId, '{"email":"a@b.c", "n": 1.50}'),
      Buffer.from([0, 0]),
      wire(rawId, '{"email": 5, "cards": 1}'),
      wire(rawId, '{"email":'),
      wire(999, '{}'),
      wire(rawId, '{ "cards": [{"number": "4111"}] }'),
    ];
    const one = await Promise.all(
      values.map((v) =>
        serde.protect(v, p, 'clean').then(
          (b) => b.toString('latin1'),
          (e: StreamError) => e.code,
        ),
      ),
    );
    const many = (
      await serde.protectMany!(
        values,
        p,
        values.map(() => 'clean'),
      )
    ).map((r) => (r instanceof StreamError ? r.code : r.toString('latin1')));
    expect(many).toEqual(one);
    expect(one.filter((r) => r.startsWith('\u0000')).length).toBeGreaterThan(0);
    registry.down = true;
    await expect(serde.protectMany!([wire(rawId + 1000, '{}')], p, ['clean'])).rejects.toMatchObject({ code: 'REGISTRY_UNAVAILABLE' });
  });
});

describe('jsonSchemaSerde with validate', () => {
  const validating = { ...protection, validate: true };
  const code = async (serde: ReturnType<typeof jsonSchemaSerde>, bytes: Buffer) =>
    (await serde.protect(bytes, validating, 'clean').then(
      () => undefined,
      (e: unknown) => e,
    )) as StreamError;
  const valid = '{"id": 1, "email":"ann@example.com","nickname":"ann","address":{"postcode":3011},"cards":[{"number":"4111111111111111"}]}';

  it('protects a record its raw schema accepts, and dead-letters one it refuses as RECORD_INVALID naming the instance path and keyword, never the value', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(rawSchema);
    const serde = jsonSchemaSerde({ registry, protectedPaths: PATHS });
    expect((await serde.protect(wire(rawId, valid), validating, 'clean')).subarray(5).toString()).toContain('"email":"tok(ann@example.com)"');
    const failures = [
      ['{"id": 1, "email":"not-an-email-address-secret"}', '/email', 'format'], // ajv-formats
      ['{"id": 1, "email":"a@b.ch", "nickname":"much-too-long-secret"}', '/nickname', 'maxLength'],
      ['{"id": 1, "email":"a@b.ch", "address":{"postcode":999}}', '/address/postcode', 'minimum'],
      ['{"id": 1, "email":"a@b.ch", "cards":[{"number":"4111111111111111"},{"number":"4111-secret"}]}', '/cards/1/number', 'pattern'],
      ['{"id": 1, "email":"a@b.ch", "cards":[{"number":"4111111111111111","secret@example.com":1}]}', '/cards/0', 'additionalProperties'],
      ['{"id": "secret-id", "email":"a@b.ch"}', '/id', 'type'],
    ] as const;
    for (const [json, pointer, keyword] of failures) {
      const e = await code(serde, wire(rawId, json));
      expect(e.code, json).toBe('RECORD_INVALID');
      expect(e.message).toContain(`the value at ${pointer} fails the schema's ${keyword} keyword`);
      expect(e.message).not.toMatch(/secret|999|a@b/);
    }
    // not JSON at all: malformed, without JSON.parse's quote of the text
    const notJson = await code(serde, wire(rawId, '{"email": secret'));
    expect([notJson.code, notJson.message]).toEqual(['RECORD_MALFORMED', 'the value is not JSON']);
    // one compilation per schema id: a steady stream asks the registry nothing more
    const calls = { ...registry.calls };
    await serde.protect(wire(rawId, valid), validating, 'clean');
    expect(registry.calls).toEqual(calls);
    // without validate the same failing record passes (only its mapped values change)
    expect((await serde.protect(wire(rawId, failures[1][0]), protection, 'clean')).subarray(5).toString()).toContain('"nickname":"tok(much-too-long-secret)"');
  });

  it('a key the schema does not declare (a map entry, maybe data itself) shows as * in the pointer; required names the missing property', async () => {
    const registry = new FakeRegistry();
    const id = registry.add({
      type: 'object',
      properties: {
        email: { type: 'string' },
        tags: { type: 'object', additionalProperties: { type: 'object', required: ['level'], properties: { level: { type: 'integer' } } } },
      },
      required: ['email'],
    });
    const serde = jsonSchemaSerde({ registry, protectedPaths: ['email'] });
    const mapEntry = await code(serde, wire(id, '{"email":"a@b.ch","tags":{"bob@secret.com":{"level":"x"}}}'));
    expect(mapEntry.message).toMatch(/^the value at \/tags\/\*\/level fails the schema's type keyword at #\//);
    const missing = await code(serde, wire(id, '{"tags":{}}'));
    expect(missing.message).toMatch(/^the value at \(root\) fails the schema's required keyword \(missing property email\)/);
  });

  it('picks the dialect from $schema (draft-07 when absent, 2019-09, 2020-12, draft-06), compiles once per schema id, and dead-letters the records of a schema it cannot compile', async () => {
    const registry = new FakeRegistry();
    const email = { type: 'object', properties: { email: { type: 'string', minLength: 5 } } };
    const ids = {
      none: registry.add(email),
      d07: registry.add({ $schema: 'http://json-schema.org/draft-07/schema#', ...email, $id: 'https://example.com/customer.json' }),
      d06: registry.add({ $schema: 'http://json-schema.org/draft-06/schema#', ...email }),
      d2019: registry.add({ $schema: 'https://json-schema.org/draft/2019-09/schema', ...email, dependentRequired: { email: ['id'] } }),
      // the same $id as another schema: no collision (one ajv per schema)
      d2020: registry.add({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        ...email,
        $id: 'https://example.com/customer.json',
        properties: { ...email.properties, list: { type: 'array', prefixItems: [{ type: 'integer' }] } },
      }),
    };
    const serde = jsonSchemaSerde({ registry, protectedPaths: ['email'] });
    for (const [dialect, id] of Object.entries(ids)) {
      await expect(serde.protect(wire(id, '{"id":1,"email":"ann@example.com","list":[1]}'), validating, 'clean'), dialect).resolves.toBeInstanceOf(Buffer);
      expect((await code(serde, wire(id, '{"id":1,"email":"a@b"}'))).code, dialect).toBe('RECORD_INVALID');
    }
    // keywords of the dialect apply
    expect((await code(serde, wire(ids.d2020, '{"email":"ann@example.com","list":["x"]}'))).message).toMatch(/\/list\/0 fails the schema's type keyword/);
    expect((await code(serde, wire(ids.d2019, '{"email":"ann@example.com"}'))).message).toMatch(/dependentRequired/);

    const draft04 = registry.add({ $schema: 'http://json-schema.org/draft-04/schema#', ...email });
    const broken = registry.add({ type: 'object', properties: { email: { type: 'strin' } } });
    const remote = registry.add({ type: 'object', properties: { email: { type: 'string' }, card: { $ref: 'https://example.com/card.json' } } });
    expect(await code(serde, wire(draft04, '{"email":"ann@example.com"}'))).toMatchObject({
      code: 'RECORD_MALFORMED',
      message: expect.stringMatching(
        /^schema \d+ cannot be compiled to validate records: \$schema "http:\/\/json-schema.org\/draft-04\/schema#" is not a supported dialect/,
      ),
    });
    expect(await code(serde, wire(broken, '{"email":"ann@example.com"}'))).toMatchObject({
      code: 'RECORD_MALFORMED',
      message: expect.stringMatching(/cannot be compiled to validate records: schema is invalid/),
    });
    expect(await code(serde, wire(remote, '{"email":"ann@example.com"}'))).toMatchObject({
      code: 'RECORD_MALFORMED',
      message: expect.stringMatching(/cannot be compiled to validate records: .*https:\/\/example.com\/card.json/),
    });
    const before = registry.calls.schemaById;
    await code(serde, wire(broken, '{"email":"ann@example.com"}'));
    expect(registry.calls.schemaById).toBe(before);
  });
});
