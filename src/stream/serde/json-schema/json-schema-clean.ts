import { cloneLossless, isJsonObject, parseLossless, printLossless, type LosslessJson, type LosslessObject } from '../../../json-bytes/lossless-json.ts';
import { foldKey } from '../../../json-bytes/paths.ts';
import { compilePath } from '../record-path.ts';
import type { TaggedField } from '../schema-tags.ts';
import { schemaUnfit } from '../../stream-error.ts';

export interface CleanJsonSchemaOptions {
  /**
   * Paths match property names case-insensitively (the pipeline's `keys: insensitive`, foldKey):
   * every declared property a step folds to is walked (`email` reaches `Email` and `email`).
   */
  foldKeys?: boolean;
}

/** a schema object as parseLossless reads it: its numbers are LosslessNumbers (objects, not schemas) */
type Schema = LosslessObject;
const isSchema = (v: unknown): v is Schema => isJsonObject(v);
const COMBINATORS = ['oneOf', 'anyOf', 'allOf', 'not', 'if', 'then', 'else'] as const;

/** A local reference (`#/$defs/Card`, `#/definitions/Card`) resolved in the root document. */
function resolve(root: Schema, node: Schema, seen = 0): Schema {
  const ref = node.$ref;
  if (typeof ref !== 'string') return node;
  if (seen > 32) throw schemaUnfit('a $ref chain longer than 32');
  const m = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref);
  const defs = m ? root[m[1]!] : undefined;
  const target = m && isSchema(defs) ? defs[decodeURIComponent(m[2]!).replaceAll('~1', '/').replaceAll('~0', '~')] : undefined;
  if (!isSchema(target)) throw schemaUnfit(`the $ref ${ref} is not a local definition`);
  // the reference may sit beside other keywords (2019-09+): they narrow the definition
  const beside = { ...node };
  delete beside.$ref;
  return resolve(root, { ...cloneLossless(target), ...beside }, seen + 1);
}

/** The leaf of a protected path: a string (nullable when the raw leaf allowed null), with its title, description and Confluent tags. */
function stringLeaf(raw: Schema): Schema {
  const types: unknown[] = Array.isArray(raw.type) ? raw.type : [raw.type];
  const out: Schema = { type: types.includes('null') ? ['string', 'null'] : 'string' };
  for (const k of ['title', 'description', '$comment', 'confluent:tags']) if (k in raw) out[k] = raw[k]!;
  return out;
}

/**
 * The clean JSON Schema of a raw one: every value a pipeline path reaches becomes a string (what
 * a protected value is), keeping the title, description, `$comment` and Confluent's
 * `confluent:tags`, and null where null was allowed; everything else is the raw schema as it was.
 * Local references on a path are inlined (the definition may be used elsewhere, unprotected).
 *
 * Every path must be declared: each step a property in `properties` (with `foldKeys`, any
 * property it folds to), `[]` an array with an `items` schema. A path the schema does not declare
 * throws a SCHEMA_PATH_UNKNOWN StreamError naming it — whatever `additionalProperties` allows: an
 * undeclared path is unknown, and the serde refuses the schema's records (SCHEMA_PATH_UNKNOWN)
 * rather than guess what the field holds. A path through a combinator (oneOf, anyOf, allOf, not,
 * if) or a tuple cannot be rewritten safely: it throws too.
 *
 * The schema is read and written losslessly (lossless-json.ts): every number in the clean text is
 * the raw text's, digit for digit — `maximum: 18446744073709551615`, an enum of integers beyond
 * 2^53, `1.0`, `1e400` — so a record valid against the raw schema stays valid against the clean
 * one (outside the protected values). Text that is not JSON throws a SyntaxError.
 */
export function deriveCleanJsonSchema(rawText: string, paths: readonly string[], options: CleanJsonSchemaOptions = {}): string {
  const root: LosslessJson = parseLossless(rawText);
  if (!isSchema(root)) throw schemaUnfit('the schema is not a JSON object');
  const doc: Schema = { root: cloneLossless(root) };
  // the schema at holder[key], its local reference inlined in place
  const inline = (holder: Schema, key: string): Schema => {
    const node = holder[key];
    if (!isSchema(node)) throw schemaUnfit(`${key} is not a schema object`);
    const resolved = resolve(doc.root as Schema, node);
    holder[key] = resolved;
    return resolved;
  };
  const fold = options.foldKeys === true;
  for (const path of paths) {
    // every place the path reaches so far: several where keys fold (`Email` and `email`)
    let places: [Schema, string][] = [[doc, 'root']];
    let walked = '';
    for (const step of compilePath(path)) {
      walked = walked ? `${walked}.${step.name}` : step.name;
      const next: [Schema, string][] = [];
      for (const [holder, key] of places) {
        const node = inline(holder, key);
        for (const c of COMBINATORS) if (c in node) throw schemaUnfit(`path ${path} crosses ${c}`);
        const properties = node.properties;
        if (!isSchema(properties)) continue;
        for (const name of Object.keys(properties)) {
          if ((fold ? foldKey(name) !== foldKey(step.name) : name !== step.name) || !isSchema(properties[name])) continue;
          if (!step.each) {
            next.push([properties, name]);
            continue;
          }
          const array = inline(properties, name);
          if (Array.isArray(array.items) || 'prefixItems' in array) throw schemaUnfit(`path ${path} crosses a tuple`);
          if (isSchema(array.items)) next.push([array, 'items']);
        }
      }
      if (next.length === 0) throw schemaUnfit(`path ${path}: the schema declares no ${walked}${step.each ? '[] (an array with items)' : ''}`, path);
      places = next;
    }
    for (const [holder, key] of places) holder[key] = stringLeaf(inline(holder, key));
  }
  return printLossless(doc.root!);
}

/** the strings of a `confluent:tags` keyword */
const tagsOf = (v: unknown): string[] => (Array.isArray(v) ? v.filter((t): t is string => typeof t === 'string' && t !== '') : []);
const join = (path: string, name: string) => (path === '' ? name : `${path}.${name}`);

/**
 * The properties `rawText` tags with Confluent's `confluent:tags` keyword (`"email": {"type":
 * "string", "confluent:tags": ["PII"]}`), in schema order, each with its pipeline path: through
 * `properties`, `items` (`[]`; a tagged array of scalars is `emails[]`) and local `$ref`s. A tagged
 * property under `additionalProperties` or `patternProperties` (`*`), a combinator (allOf, anyOf,
 * oneOf, then, else), a tuple, or a recursive reference (the tags under it, at `*`) has no
 * pipeline path (`reachable` false). Throws when the text is not a JSON Schema object.
 */
export function jsonSchemaTaggedFields(rawText: string): TaggedField[] {
  const root: LosslessJson = parseLossless(rawText);
  if (!isSchema(root)) throw schemaUnfit('the schema is not a JSON object');
  const out: TaggedField[] = [];
  const deref = (node: Schema): Schema | undefined => {
    try {
      return resolve(root, node);
    } catch {
      return undefined; // not a local reference: nothing to see there (a path through it fails the clean derivation)
    }
  };
  const tagsUnder = (node: Schema, refs: Set<string>): string[] => {
    const tags = new Set<string>();
    const visit = (n: unknown): void => {
      if (!isSchema(n)) {
        if (Array.isArray(n)) n.forEach(visit);
        return;
      }
      if (typeof n.$ref === 'string') {
        if (refs.has(n.$ref)) return;
        refs.add(n.$ref);
      }
      const r = deref(n);
      if (r === undefined) return;
      for (const t of tagsOf(r['confluent:tags'])) tags.add(t);
      for (const k of ['properties', 'patternProperties']) if (isSchema(r[k])) Object.values(r[k]).forEach(visit);
      for (const k of ['items', 'prefixItems', 'additionalProperties', 'allOf', 'anyOf', 'oneOf', 'then', 'else']) visit(r[k]);
    };
    visit(node);
    return [...tags];
  };
  const walk = (node: Schema, path: string, reachable: boolean, refs: readonly string[]): void => {
    const ref = typeof node.$ref === 'string' ? node.$ref : undefined;
    if (ref !== undefined && refs.includes(ref)) {
      const below = tagsUnder(node, new Set());
      if (below.length) out.push({ path: join(path, '*'), tags: below, reachable: false });
      return;
    }
    const n = deref(node);
    if (n === undefined) return;
    const inside = ref === undefined ? refs : [...refs, ref];
    for (const c of ['allOf', 'anyOf', 'oneOf']) if (Array.isArray(n[c])) for (const branch of n[c]) if (isSchema(branch)) walk(branch, path, false, inside);
    for (const c of ['then', 'else']) if (isSchema(n[c])) walk(n[c], path, false, inside);
    if (isSchema(n.properties)) {
      for (const [name, prop] of Object.entries(n.properties)) {
        if (!isSchema(prop)) continue;
        const at = join(path, name);
        const resolved = deref(prop);
        const tags = tagsOf(resolved?.['confluent:tags'] ?? prop['confluent:tags']);
        if (tags.length) out.push({ path: resolved !== undefined && isScalarArray(resolved) ? `${at}[]` : at, tags, reachable });
        walk(prop, at, reachable, inside);
      }
    }
    if (isSchema(n.items)) walk(n.items, `${path}[]`, reachable && path !== '' && !path.endsWith('[]'), inside);
    for (const k of ['prefixItems', 'items']) if (Array.isArray(n[k])) for (const item of n[k]) if (isSchema(item)) walk(item, `${path}[]`, false, inside);
    if (isSchema(n.additionalProperties)) walk(n.additionalProperties, join(path, '*'), false, inside);
    if (isSchema(n.patternProperties)) for (const v of Object.values(n.patternProperties)) if (isSchema(v)) walk(v, join(path, '*'), false, inside);
  };
  /** an array whose items (an object schema) declare no properties or items of their own: its elements are scalars */
  const isScalarArray = (s: Schema): boolean => {
    if (!isSchema(s.items)) return false;
    const items = deref(s.items);
    return items !== undefined && !isSchema(items.properties) && items.items === undefined;
  };
  walk(root, '', true, []);
  return out;
}
