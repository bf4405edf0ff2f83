import { describe, expect, it } from 'vitest';
import { chainFrom } from '../../../helpers/chain-from.ts';
import { mappings } from '../../../../src/stream/serde/field-mappings.ts';
import { deriveCleanJsonSchema } from '../../../../src/stream/serde/json-schema/json-schema-clean.ts';
import { StreamError } from '../../../../src/stream/stream-error.ts';
import { jsonSchemaSerde } from '../../../../src/stream/serde/json-schema/json-schema-serde.ts';
import { FakeRegistry } from '../fake-registry.ts';
import { confluentFrame } from '../../../helpers/confluent-frame.ts';

const U64_MAX = '18446744073709551615'; // 2^64 − 1: JSON.parse makes it 18446744073709552000
const ODD = '9007199254740993'; // 2^53 + 1: JSON.parse makes it 9007199254740992

/** leaf schemas, as written (compact, so the clean text can be compared with the raw text byte for byte) */
const leaf = {
  id: `{"type":"integer","minimum":-9223372036854775808,"maximum":${U64_MAX}}`,
  code: `{"enum":[${ODD},9007199254740995,${U64_MAX},-0]}`,
  version: `{"const":${ODD}}`,
  count: `{"type":"integer","default":${U64_MAX},"examples":[${ODD},1.0]}`,
  ratio: '{"type":"number","multipleOf":0.10,"minimum":-0,"exclusiveMaximum":1e400,"default":1.50,"examples":[2.50e-3,1E+2]}',
  email: '{"type":"string","maxLength":320,"description":"where we write"}',
  secret: `{"type":["integer","null"],"minimum":${ODD},"maximum":${U64_MAX},"default":${U64_MAX},"title":"Secret"}`,
  card: '{"$ref":"#/$defs/Card"}',
  backup: '{"$ref":"#/$defs/Card"}',
};
const card = `{"type":"object","properties":{"number":{"type":"integer","maximum":9999999999999999999},"limit":{"type":"integer","const":${U64_MAX}}},"additionalProperties":false}`;
const props = (l: Record<string, string>) =>
  Object.entries(l)
    .map(([k, v]) => `"${k}":${v}`)
    .join(',');
const schemaText = (l: Record<string, string>) =>
  `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"Account","type":"object","properties":{${props(l)}},"required":["id"],"$defs":{"Card":${card}}}`;
const RAW = schemaText(leaf);

describe('deriveCleanJsonSchema keeps every number as written', () => {
  it('with no path to protect, the clean text is the raw text (compact) byte for byte', () => {
    expect(JSON.stringify(JSON.parse(RAW))).not.toBe(RAW); // what JSON.parse/JSON.stringify did
    expect(deriveCleanJsonSchema(RAW, [])).toBe(RAW);
    expect(() => deriveCleanJsonSchema(RAW, ['nothing.here', 'nor[].there'])).toThrow(/declares no nothing/);
  });

  it('maximum, minimum, enum, const, default, examples and multipleOf keep their digits; only the protected leaves change', () => {
    const clean = deriveCleanJsonSchema(RAW, ['email', 'secret', 'card.number']);
    // the referenced definition is inlined on the path (its numbers copied as written), the
    // definition itself and its other user untouched
    const inlinedCard = `{"type":"object","properties":{"number":{"type":"string"},"limit":{"type":"integer","const":${U64_MAX}}},"additionalProperties":false}`;
    expect(clean).toBe(
      schemaText({
        ...leaf,
        email: '{"type":"string","description":"where we write"}',
        secret: '{"type":["string","null"],"title":"Secret"}',
        card: inlinedCard,
      }),
    );
    for (const text of [
      `"maximum":${U64_MAX}`,
      `"enum":[${ODD},9007199254740995,${U64_MAX},-0]`,
      `"const":${ODD}`,
      `"default":${U64_MAX}`,
      `"examples":[${ODD},1.0]`,
      '"multipleOf":0.10',
      '"exclusiveMaximum":1e400',
      '"default":1.50',
      '"minimum":-9223372036854775808',
    ]) {
      expect(clean).toContain(text);
    }
    expect(clean).not.toContain('18446744073709552000');
    expect(clean).not.toContain('9007199254740992');
  });

  it('keeps the numbers of a pretty-printed raw schema too (the clean text is compact)', () => {
    const spaced = `\n${RAW.replaceAll(',', ' ,\n  ').replaceAll('":', '" : ')}\n`; // (no string in RAW holds a comma)
    expect(deriveCleanJsonSchema(spaced, ['email'])).toBe(schemaText({ ...leaf, email: '{"type":"string","description":"where we write"}' }));
  });

  it('a schema that is not an object, or not JSON, is still refused', () => {
    expect(() => deriveCleanJsonSchema(ODD, ['a'])).toThrow(StreamError);
    expect(() => deriveCleanJsonSchema('[1.0]', ['a'])).toThrow(StreamError);
    expect(() => deriveCleanJsonSchema('{"type":', ['a'])).toThrow(SyntaxError);
    // a number where a schema belongs is no schema to walk into: the path is not declared
    expect(() => deriveCleanJsonSchema(`{"type":"object","properties":{"a":${ODD}}}`, ['a.b'])).toThrow(/declares no a$/);
    expect(() => deriveCleanJsonSchema('{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":1.0}}', ['a'])).toThrow(/not a local definition/);
  });
});

describe('jsonSchemaSerde registers the lossless clean schema', () => {
  it('the registered clean text keeps the raw digits, and the record bytes (big integers included) pass as written', async () => {
    const registry = new FakeRegistry();
    const rawId = registry.add(RAW);
    const serde = jsonSchemaSerde({ registry, protectedPaths: ['email'] });
    const protection = { maps: mappings(['email'], [chainFrom((v: string) => `tok(${v})`)]), missing: 'pass' as const };
    const json = `{"id":${U64_MAX},"code":${ODD},"version":${ODD},"count":${U64_MAX},"ratio":1.0,"email":"a@b.ch"}`;
    const out = await serde.protect(confluentFrame(rawId, json), protection, 'clean');
    const cleanId = out.readUInt32BE(1);
    expect(registry.types.get(cleanId)).toBe('JSON');
    expect(registry.schemas.get(cleanId)).toBe(schemaText({ ...leaf, email: '{"type":"string","description":"where we write"}' }));
    expect(out.subarray(5).toString()).toBe(json.replace('"a@b.ch"', '"tok(a@b.ch)"'));
  });
});
