import avro from 'avsc';

/**
 * avsc Types as the Avro serde reads and writes them:
 * - unions as plain values where that is unambiguous (`["null","string"]` → a string or null), so
 *   record paths walk through them; ambiguous unions (two records, int and long…) stay wrapped
 *   (`{"int": 5}`) exactly as avsc's 'auto' does, and pass through unchanged;
 * - `long` as a number while it is a safe integer and as a bigint beyond ±2^53, so large longs
 *   (nanosecond timestamps, snowflake ids) round-trip exactly instead of failing to decode.
 *   In a union that also holds int/float/double the branch is avsc's plain long (wrapped).
 * - maps as arrays of {key, value}, so entries keep their order and duplicates (byte for byte);
 * No logical types: timestamps stay numbers, decimals stay bytes, as written.
 */
export function avroType(schema: unknown): avro.Type {
  return avro.Type.forSchema(schema as avro.Schema, { typeHook, omitRecordMethods: true });
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const SAFE_MIN = BigInt(Number.MIN_SAFE_INTEGER);
const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);

const safeLong = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer): number | bigint => {
    const n = buf.readBigInt64LE();
    return n >= SAFE_MIN && n <= SAFE_MAX ? Number(n) : n;
  },
  toBuffer: (n: number | bigint): Buffer => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: (n: unknown): number | bigint => (typeof n === 'number' && Number.isSafeInteger(n) ? n : BigInt(n as number)),
  // exact: avsc copies a long as fromJSON(toJSON(value)), a field's default too when it builds the
  // record writer — Number() would move 9223372036854775807 to 2^63 and refuse a valid default
  toJSON: (n: number | bigint): number | bigint => n,
  isValid: (n: unknown): boolean => (typeof n === 'number' && Number.isSafeInteger(n)) || (typeof n === 'bigint' && n >= INT64_MIN && n <= INT64_MAX),
  compare: (a: number | bigint, b: number | bigint): number => (a < b ? -1 : a > b ? 1 : 0),
});
const plainLong = avro.Type.forSchema('long');

const isLong = (s: unknown) => s === 'long' || (typeof s === 'object' && s !== null && !Array.isArray(s) && (s as { type?: unknown }).type === 'long');

let mapEntries = 0;

function typeHook(schema: unknown, opts: avro.ForSchemaOptions): avro.Type | undefined {
  if (isLong(schema)) return safeLong;
  if (typeof schema === 'object' && schema !== null && (schema as { type?: unknown }).type === 'map') {
    // a map's binary form is an array of (key, value) pairs: read it as one, so its entries keep
    // their order (a JS object would move integer-like keys first) and duplicate keys survive
    const values = (schema as { values: unknown }).values;
    const entry = {
      type: 'record',
      name: `veil_map_entry_${++mapEntries}`,
      fields: [
        { name: 'key', type: 'string' },
        { name: 'value', type: values },
      ],
    };
    return avro.Type.forSchema({ type: 'array', items: entry } as avro.Schema, opts);
  }
  if (!Array.isArray(schema)) return undefined;
  // a union: decide wrapping ourselves, since avsc would not see safeLong as a number
  const numbers = schema.filter(
    (s) => isLong(s) || ['int', 'float', 'double'].includes(typeof s === 'string' ? s : ((s as { type?: string })?.type ?? '')),
  ).length;
  const types = schema.map((s) => (isLong(s) && numbers > 1 ? plainLong : avro.Type.forSchema(s as avro.Schema, opts)));
  const buckets = types.map((t) => (t === safeLong ? 'number' : avro.Type.isType(t, 'logical') ? undefined : bucket(t.typeName)));
  const seen = buckets.filter((b) => b !== undefined);
  const Union = new Set(seen).size !== seen.length ? avro.types.WrappedUnionType : avro.types.UnwrappedUnionType;
  return new Union(types as unknown as avro.Schema, opts);
}

function bucket(typeName: string): string {
  switch (typeName) {
    case 'int':
    case 'long':
    case 'float':
    case 'double':
      return 'number';
    case 'bytes':
    case 'fixed':
      return 'buffer';
    case 'enum':
      return 'string';
    case 'map':
    case 'record':
    case 'error':
      return 'object';
    default:
      return typeName;
  }
}
