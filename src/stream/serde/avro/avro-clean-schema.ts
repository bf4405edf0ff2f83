import { createHash } from 'node:crypto';
import { isJsonNumber, isJsonObject, numberValue, parseLossless, printLossless, toPlain, type LosslessJson } from '../../../json-bytes/lossless-json.ts';
import { schemaUnfit, StreamError } from '../../stream-error.ts';
import type { TaggedField } from '../schema-tags.ts';

/**
 * The clean schema of an Avro raw schema: the schema protected records are written with.
 *
 * Pure (schema text and paths in, schema text out). Every protected record path ends at a scalar
 * (boolean, int, long, float, double, string, enum; also inside a union of such) and its type
 * becomes `string` — a union keeps its `null` branch, in its place, and `string` takes the place of
 * the first other branch (`["null","int"]` → `["null","string"]`). Paths walk through records,
 * arrays (`cards[]`) and nullable unions (`["null", T]`); anything else is refused (schemaUnfit). Field
 * defaults along a protected path are kept valid (a protected default becomes its text: 5 → "5").
 * Everything that no path touches is unchanged.
 *
 * A named type reached by paths is modified in place and keeps its name — unless it is also used
 * unmodified, or modified differently, elsewhere in the schema: then each modified variant is a new
 * type named `<Name>_<8 hex digits of the paths it carries>` (stable across schema versions). The
 * output is deterministic compact JSON; every named type is written with an explicit namespace
 * where it is first used and referred to by its full name afterwards.
 *
 * The schema is read and written losslessly (lossless-json.ts): every number — a `long` default
 * beyond 2^53, a `double` default `1.0` or `1e400`, numbers inside record, array, map and union
 * defaults, a fixed's size — is the raw text's, digit for digit; a protected number default
 * becomes the text it was written as (`9223372036854775807` → `"9223372036854775807"`).
 */

/** JSON as parseLossless reads it: each number a LosslessNumber, the digits as written */
type Json = LosslessJson;
type JsonObject = { [key: string]: Json };

type Op = { kind: 'field'; name: string } | { kind: 'items' };
/** one protected path, and how far into it the walk is */
interface Demand {
  path: string;
  ops: readonly Op[];
  at: number;
}

interface Named {
  fullName: string;
  simpleName: string;
  namespace: string;
  kind: 'record' | 'enum' | 'fixed';
  node: JsonObject;
}

/** A named type as it appears in the clean schema: the original, or one modified for some paths. */
interface Variant {
  named: Named;
  key: string;
  body?: Map<string, Out>;
  fullName?: string;
}

class Use {
  readonly variant: Variant;
  constructor(variant: Variant) {
    this.variant = variant;
  }
}

/** the clean schema under construction: JSON whose named types are Uses */
type Out = Json | Use | Out[] | { [key: string]: Out };

const PRIMITIVES = new Set(['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string']);
const SCALAR_BUCKET: Record<string, string> = {
  boolean: 'boolean',
  int: 'number',
  long: 'number',
  float: 'number',
  double: 'number',
  string: 'string',
  enum: 'string',
};
const PATH = /^[A-Za-z_][A-Za-z0-9_]*(\[\])?(\.[A-Za-z_][A-Za-z0-9_]*(\[\])?)*$/;

export interface DeriveOptions {
  /**
   * A path naming a field the schema does not have: 'error' (default; a SCHEMA_PATH_UNKNOWN
   * StreamError naming the path: the serde refuses such a schema's records), or 'skip' it.
   * Paths that contradict the schema's shape are errors either way.
   */
  absent?: 'error' | 'skip';
}

/** Derives the clean schema (compact JSON) of `rawSchema` for the protected record paths. */
export function deriveCleanSchema(rawSchema: string, paths: readonly string[], options: DeriveOptions = {}): string {
  return printLossless(new Derivation(read(rawSchema), paths, options.absent ?? 'error').run());
}

/**
 * The fields `rawSchema` tags with Confluent's `confluent:tags` field attribute
 * (`{"name": "email", "type": "string", "confluent:tags": ["PII"]}`), in schema order, each with
 * its pipeline path: through records, arrays (`[]`; a tagged array of scalars is `emails[]`) and
 * nullable unions. A tagged field under a map (`*`), a union of several types, or a recursive
 * type (the tags under it, at `*`) has no pipeline path (`reachable` false). Throws when the
 * schema cannot be read.
 */
export function avroTaggedFields(rawSchema: string): TaggedField[] {
  return new Derivation(read(rawSchema), [], 'error').tagged();
}

/**
 * The paths, in the order given, that name a field `rawSchema` does not have (record field names
 * match exactly). A path that contradicts the schema's shape is not listed here (deriving throws
 * for it); a schema that cannot be read throws.
 */
export function unknownAvroPaths(rawSchema: string, paths: readonly string[]): string[] {
  const root = read(rawSchema);
  return paths.filter((path) => {
    try {
      new Derivation(root, [path], 'error').run();
      return false;
    } catch (e) {
      if (e instanceof StreamError) return e.code === 'SCHEMA_PATH_UNKNOWN';
      throw e;
    }
  });
}

function read(rawSchema: string): Json {
  try {
    return parseLossless(rawSchema);
  } catch {
    throw schemaUnfit('the schema is not JSON');
  }
}

/**
 * An Avro schema's text as avsc's `Type.forSchema` should get it: the value `JSON.parse` gives,
 * except a `long` default (also inside a record, array, map or union default) written as an
 * integer beyond ±2^53 is a bigint — its exact value, which the serde's long type (avro-types.ts)
 * holds — where JSON.parse's nearest double would be wrong, or out of range and refused
 * (`9223372036854775807` → 2^63). Everything else is as JSON.parse reads it: a `double` default
 * stays a number. Text that is not JSON throws.
 */
export function avscSchema(schemaText: string): unknown {
  const root = parseLossless(schemaText);
  try {
    return new Derivation(root, [], 'error').forAvsc();
  } catch {
    return toPlain(root); // not a schema the derivation can read: avsc judges it as JSON.parse reads it
  }
}

function compile(path: string): Op[] {
  if (!PATH.test(path)) throw schemaUnfit(`${path}: not a record path (names joined by dots, [] after an array)`);
  return path
    .split('.')
    .flatMap((part): Op[] => (part.endsWith('[]') ? [{ kind: 'field', name: part.slice(0, -2) }, { kind: 'items' }] : [{ kind: 'field', name: part }]));
}

const isObject = (v: Json | undefined): v is JsonObject => isJsonObject(v);
/** the strings of a `confluent:tags` attribute (anything else there holds no tag) */
const tagsOf = (v: Json | undefined): string[] => (Array.isArray(v) ? v.filter((t): t is string => typeof t === 'string' && t !== '') : []);
const join = (path: string, name: string) => (path === '' ? name : `${path}.${name}`);
const isLeaf = (d: Demand) => d.at === d.ops.length;
/** a protected default: a scalar becomes its text (a number the digits as written), null and structures stay */
const asText = (value: Json): Json => (isJsonNumber(value) ? value.value : value === null || typeof value === 'object' ? value : String(value));
const advance = (d: Demand): Demand => ({ ...d, at: d.at + 1 });
/** where a demand is in its path, for messages: `cards[]` reached, `number` next */
const where = (d: Demand) => {
  const done = d.ops.slice(0, d.at);
  const text = done
    .map((op) => (op.kind === 'field' ? `.${op.name}` : '[]'))
    .join('')
    .slice(1);
  return text || '(the record itself)';
};

type Kind =
  | { kind: 'primitive'; name: string }
  | { kind: 'named'; named: Named }
  | { kind: 'array'; node: JsonObject }
  | { kind: 'map'; node: JsonObject }
  | { kind: 'union'; branches: Json[] };

class Derivation {
  private readonly root: Json;
  private readonly demands: Demand[];
  private readonly names = new Map<string, Named>();
  private readonly variants = new Map<string, Variant>();
  private readonly absent: 'error' | 'skip';

  constructor(root: Json, paths: readonly string[], absent: 'error' | 'skip') {
    this.root = root;
    this.absent = absent;
    this.demands = [...new Set(paths)].map((path) => ({ path, ops: compile(path), at: 0 }));
    this.index(root, '');
  }

  /** the tagged fields (avroTaggedFields) */
  tagged(): TaggedField[] {
    const out: TaggedField[] = [];
    this.tagWalk(this.root, '', '', true, [], out);
    return out;
  }

  private tagWalk(node: Json, ns: string, path: string, reachable: boolean, stack: readonly string[], out: TaggedField[]): void {
    const t = this.classify(node, ns);
    if (t.kind === 'union') {
      const branches = t.branches.filter((b) => !this.isNull(b, ns));
      for (const b of branches) this.tagWalk(b, ns, path, reachable && branches.length === 1, stack, out);
    } else if (t.kind === 'array') this.tagWalk(t.node.items ?? null, ns, `${path}[]`, reachable && !path.endsWith('[]'), stack, out);
    else if (t.kind === 'map') this.tagWalk(t.node.values ?? null, ns, join(path, '*'), false, stack, out);
    else if (t.kind === 'named' && t.named.kind === 'record') {
      const named = t.named;
      if (stack.includes(named.fullName)) {
        const below = this.tagsUnder(named, new Set());
        if (below.length) out.push({ path: join(path, '*'), tags: below, reachable: false });
        return;
      }
      for (const field of named.node.fields as JsonObject[]) {
        const at = join(path, field.name as string);
        const tags = tagsOf(field['confluent:tags']);
        if (tags.length) out.push({ path: this.tagLeaf(field.type!, named.namespace, at), tags, reachable });
        this.tagWalk(field.type!, named.namespace, at, reachable, [...stack, named.fullName], out);
      }
    }
  }

  /** a tagged field's path: `emails[]` when it is an array (maybe nullable) of scalars, whose elements are what is protected */
  private tagLeaf(node: Json, ns: string, path: string): string {
    let t = this.classify(node, ns);
    if (t.kind === 'union') {
      const branches = t.branches.filter((b) => !this.isNull(b, ns));
      if (branches.length === 1) t = this.classify(branches[0]!, ns);
    }
    return t.kind === 'array' && scalarBucket(this.classify(t.node.items ?? null, ns)) !== undefined ? `${path}[]` : path;
  }

  /** every tag on a field of `named` or under it, once */
  private tagsUnder(named: Named, seen: Set<string>): string[] {
    if (seen.has(named.fullName)) return [];
    seen.add(named.fullName);
    const tags = new Set<string>();
    const visit = (node: Json, ns: string): void => {
      const t = this.classify(node, ns);
      if (t.kind === 'union') t.branches.forEach((b) => visit(b, ns));
      else if (t.kind === 'array') visit(t.node.items ?? null, ns);
      else if (t.kind === 'map') visit(t.node.values ?? null, ns);
      else if (t.kind === 'named' && t.named.kind === 'record') for (const tag of this.tagsUnder(t.named, seen)) tags.add(tag);
    };
    for (const field of named.node.fields as JsonObject[]) {
      for (const tag of tagsOf(field['confluent:tags'])) tags.add(tag);
      visit(field.type!, named.namespace);
    }
    return [...tags];
  }

  run(): Json {
    const out = this.build(this.root, '', this.demands);
    this.nameVariants();
    return this.serialize(out, '', new Set());
  }

  // ---- names ----------------------------------------------------------------------------------

  /** collects the named types (full name → definition), resolving namespaces as Avro does */
  private index(node: Json, ns: string): void {
    if (Array.isArray(node)) {
      for (const branch of node) this.index(branch, ns);
      return;
    }
    if (!isObject(node)) return;
    const type = node.type;
    if (type === 'record' || type === 'error' || type === 'enum' || type === 'fixed') {
      const named = this.define(node, ns);
      if (named.kind === 'record') {
        const fields = node.fields;
        if (!Array.isArray(fields)) throw schemaUnfit(`record ${named.fullName} has no fields array`);
        for (const field of fields) {
          if (!isObject(field) || typeof field.name !== 'string' || field.type === undefined)
            throw schemaUnfit(`record ${named.fullName} has a field without a name or type`);
          this.index(field.type, named.namespace);
        }
      }
    } else if (type === 'array') this.index(node.items ?? null, ns);
    else if (type === 'map') this.index(node.values ?? null, ns);
  }

  private define(node: JsonObject, ns: string): Named {
    const name = node.name;
    if (typeof name !== 'string' || name === '') throw schemaUnfit(`a ${String(node.type)} has no name`);
    const dot = name.lastIndexOf('.');
    const namespace = dot >= 0 ? name.slice(0, dot) : typeof node.namespace === 'string' ? node.namespace : ns;
    const simpleName = dot >= 0 ? name.slice(dot + 1) : name;
    const fullName = namespace ? `${namespace}.${simpleName}` : simpleName;
    if (this.names.has(fullName)) {
      if (this.names.get(fullName)!.node === node) return this.names.get(fullName)!;
      throw schemaUnfit(`the schema defines ${fullName} twice`);
    }
    const named: Named = { fullName, simpleName, namespace, kind: node.type === 'error' ? 'record' : (node.type as Named['kind']), node };
    this.names.set(fullName, named);
    return named;
  }

  private resolve(ref: string, ns: string): Named {
    const named = (!ref.includes('.') && ns ? this.names.get(`${ns}.${ref}`) : undefined) ?? this.names.get(ref);
    if (!named) throw schemaUnfit(`the schema refers to an undefined type ${ref}`);
    return named;
  }

  private classify(node: Json, ns: string): Kind {
    if (typeof node === 'string') return PRIMITIVES.has(node) ? { kind: 'primitive', name: node } : { kind: 'named', named: this.resolve(node, ns) };
    if (Array.isArray(node)) return { kind: 'union', branches: node };
    if (!isObject(node)) throw schemaUnfit(`not an Avro type: ${printLossless(node)}`);
    const type = node.type;
    if (typeof type === 'string' && PRIMITIVES.has(type)) return { kind: 'primitive', name: type };
    if (type === 'record' || type === 'error' || type === 'enum' || type === 'fixed') return { kind: 'named', named: this.define(node, ns) };
    if (type === 'array') return { kind: 'array', node };
    if (type === 'map') return { kind: 'map', node };
    // {"type": "x.Address"}: a reference written as an object
    if (typeof type === 'string') return { kind: 'named', named: this.resolve(type, ns) };
    throw schemaUnfit(`not an Avro type: ${printLossless(node)}`);
  }

  // ---- building ---------------------------------------------------------------------------------

  private build(node: Json, ns: string, demands: Demand[]): Out {
    const t = this.classify(node, ns);
    if (t.kind === 'union') return this.buildUnion(t.branches, ns, demands);
    const leaves = demands.filter(isLeaf);
    const deeper = demands.filter((d) => !isLeaf(d));
    if (leaves.length) {
      const leaf = leaves[0]!;
      if (!scalarBucket(t)) {
        const hint = t.kind === 'array' ? ` (write ${where(leaf)}[] to protect its elements)` : '';
        throw schemaUnfit(
          `${leaf.path}: ${where(leaf)} is ${describe(t)}; only a scalar (boolean, int, long, float, double, string, enum) can be protected${hint}`,
        );
      }
      if (deeper.length) throw schemaUnfit(`${deeper[0]!.path}: walks into ${where(leaf)}, which is ${describe(t)}, not a record`);
      return 'string';
    }
    switch (t.kind) {
      case 'primitive':
        if (deeper.length) throw schemaUnfit(`${deeper[0]!.path}: ${where(deeper[0]!)} is ${describe(t)}, not a record`);
        return node;
      case 'named':
        return new Use(this.variant(t.named, deeper));
      case 'map':
        if (deeper.length) throw schemaUnfit(`${deeper[0]!.path}: ${where(deeper[0]!)} is a map; paths walk through records, arrays and nullable unions only`);
        return { ...t.node, values: this.build(t.node.values ?? null, ns, []) };
      case 'array': {
        const wrong = deeper.find((d) => d.ops[d.at]!.kind !== 'items');
        if (wrong) throw schemaUnfit(`${wrong.path}: ${where(wrong)} is an array; write ${where(wrong)}[] to walk its elements`);
        return { ...t.node, items: this.build(t.node.items ?? null, ns, deeper.map(advance)) };
      }
    }
  }

  private buildUnion(branches: Json[], ns: string, demands: Demand[]): Out {
    if (!demands.length) return branches.map((b) => this.build(b, ns, []));
    const kinds = branches.map((b) => this.classify(b, ns));
    const nonNull = kinds.map((k, i) => (k.kind === 'primitive' && k.name === 'null' ? -1 : i)).filter((i) => i >= 0);
    const first = demands[0]!;
    if (demands.some((d) => !isLeaf(d))) {
      const d = demands.find((x) => !isLeaf(x))!;
      if (nonNull.length !== 1)
        throw schemaUnfit(`${d.path}: ${where(d)} is a union of ${nonNull.length} non-null types; paths walk through nullable unions ["null", T] only`);
      return branches.map((b, i) => this.build(b, ns, i === nonNull[0] ? demands : []));
    }
    const buckets = nonNull.map((i) => scalarBucket(kinds[i]!));
    if (buckets.some((b) => !b)) throw schemaUnfit(`${first.path}: ${where(first)} is a union with a non-scalar type; only scalars can be protected`);
    if (new Set(buckets).size !== buckets.length)
      throw schemaUnfit(
        `${first.path}: ${where(first)} is a union of types that decode to the same kind of value (${nonNull.map((i) => describe(kinds[i]!)).join(', ')}); it cannot be protected`,
      );
    return branches.flatMap((b, i): Out[] => (i === nonNull[0] ? ['string'] : nonNull.includes(i) ? [] : [this.build(b, ns, [])]));
  }

  /** the variant of a named type for the paths that reach it (memoized: recursive types end) */
  private variant(named: Named, all: Demand[]): Variant {
    const demands = named.kind === 'record' ? this.present(named, all) : all;
    const key = [...new Set(demands.map((d) => JSON.stringify(d.ops.slice(d.at))))].sort().join('\n');
    const id = `${named.fullName}\u0000${key}`;
    const existing = this.variants.get(id);
    if (existing) return existing;
    const variant: Variant = { named, key };
    this.variants.set(id, variant);
    const body = new Map<string, Out>();
    const ns = named.namespace;
    for (const [k, v] of Object.entries(named.node)) if (k !== 'type' && k !== 'name' && k !== 'namespace') body.set(k, v);
    if (demands.length && named.kind !== 'record') {
      const d = demands[0]!;
      throw schemaUnfit(`${d.path}: ${where(d)} is ${named.kind} ${named.fullName}, not a record`);
    }
    if (named.kind === 'record') {
      const fields = named.node.fields as JsonObject[];
      body.set(
        'fields',
        fields.map((field) => {
          const mine = demands.filter((d) => (d.ops[d.at] as { name?: string }).name === field.name).map(advance);
          const out: { [key: string]: Out } = { ...field, type: this.build(field.type!, ns, mine) };
          if (mine.length && 'default' in field) out.default = this.convertDefault(field.default!, field.type!, ns, mine);
          return out;
        }),
      );
    }
    variant.body = body;
    return variant;
  }

  /** the demands on a record whose next field it has (the others are errors, or skipped) */
  private present(named: Named, demands: Demand[]): Demand[] {
    const fields = named.node.fields as JsonObject[];
    return demands.filter((d) => {
      const op = d.ops[d.at]!;
      if (op.kind !== 'field') throw schemaUnfit(`${d.path}: ${where(d)} is record ${named.fullName}, not an array`);
      if (fields.some((f) => f.name === op.name)) return true;
      if (this.absent === 'skip') return false;
      throw schemaUnfit(`${d.path}: record ${named.fullName} has no field ${op.name}`, d.path);
    });
  }

  /** a default value along protected paths, made valid for the clean type */
  private convertDefault(value: Json, node: Json, ns: string, demands: Demand[]): Json {
    const t = this.classify(node, ns);
    if (t.kind === 'union') {
      // (a field's default belongs to the union's first branch: null stays first, string takes the
      // place of the first other branch, so the converted default still matches)
      if (value === null) return value;
      if (demands.some(isLeaf)) return asText(value);
      const branch = t.branches.find((b) => !this.isNull(b, ns));
      return branch === undefined ? value : this.convertDefault(value, branch, ns, demands);
    }
    if (demands.some(isLeaf)) return asText(value);
    if (t.kind === 'array' && Array.isArray(value)) return value.map((v) => this.convertDefault(v, t.node.items ?? null, ns, demands.map(advance)));
    if (t.kind === 'named' && t.named.kind === 'record' && isObject(value)) {
      const converted: JsonObject = { ...value };
      for (const field of t.named.node.fields as JsonObject[]) {
        const mine = demands.filter((d) => (d.ops[d.at] as { name?: string }).name === field.name).map(advance);
        const name = field.name as string;
        if (mine.length && name in value) converted[name] = this.convertDefault(value[name]!, field.type!, t.named.namespace, mine);
      }
      return converted;
    }
    return value;
  }

  // ---- the schema for avsc ---------------------------------------------------------------------

  /** the schema as JS values for avsc's Type.forSchema (see avscSchema) */
  forAvsc(): unknown {
    return this.avscType(this.root, '');
  }

  private avscType(node: Json, ns: string): unknown {
    if (Array.isArray(node)) return node.map((branch) => this.avscType(branch, ns));
    if (!isObject(node)) return toPlain(node);
    const out = toPlain(node) as Record<string, unknown>;
    const type = node.type;
    if (type === 'record' || type === 'error') {
      const named = this.define(node, ns);
      out.fields = (node.fields as JsonObject[]).map((field) => {
        const f = toPlain(field) as Record<string, unknown>;
        f.type = this.avscType(field.type!, named.namespace);
        if ('default' in field) f.default = this.avscDefault(field.default!, field.type!, named.namespace);
        return f;
      });
    } else if (type === 'array' && node.items !== undefined) out.items = this.avscType(node.items, ns);
    else if (type === 'map' && node.values !== undefined) out.values = this.avscType(node.values, ns);
    return out;
  }

  /** a default as a JS value of its type: a long beyond ±2^53 a bigint, other numbers as JSON.parse reads them */
  private avscDefault(value: Json, node: Json, ns: string): unknown {
    let t: Kind;
    try {
      t = this.classify(node, ns);
    } catch {
      return toPlain(value);
    }
    switch (t.kind) {
      case 'union': // a union's default is of its first branch
        return t.branches.length ? this.avscDefault(value, t.branches[0]!, ns) : toPlain(value);
      case 'primitive':
        return isJsonNumber(value) ? numberValue(value, t.name === 'long') : toPlain(value);
      case 'array':
        return Array.isArray(value) ? value.map((v) => this.avscDefault(v, t.node.items ?? null, ns)) : toPlain(value);
      case 'map':
        // the serde reads a map as the array of its entries (avro-types.ts): so is its default
        return isObject(value) ? Object.entries(value).map(([key, v]) => ({ key, value: this.avscDefault(v, t.node.values ?? null, ns) })) : toPlain(value);
      case 'named': {
        if (t.named.kind !== 'record' || !isObject(value)) return toPlain(value);
        const types = new Map((t.named.node.fields as JsonObject[]).map((f) => [f.name as string, f.type!]));
        const fieldNs = t.named.namespace;
        return mapValues(value, (v, name) => (types.has(name) ? this.avscDefault(v, types.get(name)!, fieldNs) : toPlain(v)));
      }
    }
  }

  private isNull(node: Json, ns: string): boolean {
    const k = this.classify(node, ns);
    return k.kind === 'primitive' && k.name === 'null';
  }

  // ---- naming and writing -----------------------------------------------------------------------

  private nameVariants(): void {
    const byName = new Map<string, Variant[]>();
    for (const v of this.variants.values()) byName.set(v.named.fullName, [...(byName.get(v.named.fullName) ?? []), v]);
    for (const [fullName, variants] of byName) {
      const modified = variants.filter((v) => v.key !== '');
      const keepName = modified.length <= 1 && modified.length === variants.length;
      for (const v of variants) {
        if (v.key === '' || keepName) {
          v.fullName = fullName;
          continue;
        }
        const renamed = `${fullName}_${createHash('sha256').update(v.key).digest('hex').slice(0, 8)}`;
        if (this.names.has(renamed)) throw schemaUnfit(`cannot name a modified copy of ${fullName}: ${renamed} exists`);
        v.fullName = renamed;
        v.body!.delete('aliases');
      }
    }
  }

  private serialize(out: Out, ns: string, written: Set<Variant>): Json {
    if (out instanceof Use) {
      const v = out.variant;
      const fullName = v.fullName!;
      if (written.has(v)) return fullName;
      written.add(v);
      const dot = fullName.lastIndexOf('.');
      const namespace = dot >= 0 ? fullName.slice(0, dot) : '';
      const def: JsonObject = { type: v.named.node.type === 'error' ? 'error' : v.named.kind, name: fullName.slice(dot + 1) };
      if (namespace || ns) def.namespace = namespace;
      for (const [k, value] of v.body!) def[k] = this.serialize(value, namespace, written);
      return def;
    }
    if (Array.isArray(out)) return out.map((o) => this.serialize(o, ns, written));
    if (isJsonNumber(out)) return out;
    if (out !== null && typeof out === 'object') {
      const obj: JsonObject = {};
      for (const [k, value] of Object.entries(out)) obj[k] = k === 'default' ? (value as Json) : this.serialize(value, ns, written);
      return obj;
    }
    return out;
  }
}

/** an object's entries mapped, a `__proto__` key kept an own property */
function mapValues(object: JsonObject, f: (value: Json, key: string) => unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(object)) Object.defineProperty(out, k, { value: f(v, k), writable: true, enumerable: true, configurable: true });
  return out;
}

function scalarBucket(t: Kind): string | undefined {
  if (t.kind === 'primitive') return SCALAR_BUCKET[t.name];
  if (t.kind === 'named' && t.named.kind === 'enum') return 'string';
  return undefined;
}

function describe(t: Kind): string {
  switch (t.kind) {
    case 'primitive':
      return `a ${t.name}`;
    case 'named':
      return `${t.named.kind} ${t.named.fullName}`;
    case 'array':
      return 'an array';
    case 'map':
      return 'a map';
    case 'union':
      return 'a union';
  }
}
