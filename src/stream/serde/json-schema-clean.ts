import { cloneLossless, isJsonObject, parseLossless, printLossless, type LosslessJson, type LosslessObject } from '../../json-bytes/lossless-json.ts';
import { foldKey } from '../../json-bytes/paths.ts';
import { compilePath } from '../record-path.ts';

/** Why a raw JSON Schema cannot get a clean form for the pipeline's paths (the records are dead-lettered). */
export class CleanJsonSchemaError extends Error {
  /** the mapped path the schema does not declare: the schema is refused for the pipeline (SCHEMA_PATH_UNKNOWN) */
  readonly unknownPath?: string;
  constructor(message: string, unknownPath?: string) {
    super(message);
    this.name = 'CleanJsonSchemaError';
    if (unknownPath !== undefined) this.unknownPath = unknownPath;
  }
}

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
  if (seen > 32) throw new CleanJsonSchemaError('a $ref chain longer than 32');
  const m = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref);
  const defs = m ? root[m[1]!] : undefined;
  const target = m && isSchema(defs) ? defs[decodeURIComponent(m[2]!).replaceAll('~1', '/').replaceAll('~0', '~')] : undefined;
  if (!isSchema(target)) throw new CleanJsonSchemaError(`the $ref ${ref} is not a local definition`);
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
 * throws a CleanJsonSchemaError with `unknownPath` — whatever `additionalProperties` allows: an
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
  if (!isSchema(root)) throw new CleanJsonSchemaError('the schema is not a JSON object');
  const doc: Schema = { root: cloneLossless(root) };
  // the schema at holder[key], its local reference inlined in place
  const inline = (holder: Schema, key: string): Schema => {
    const node = holder[key];
    if (!isSchema(node)) throw new CleanJsonSchemaError(`${key} is not a schema object`);
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
        for (const c of COMBINATORS) if (c in node) throw new CleanJsonSchemaError(`path ${path} crosses ${c}`);
        const properties = node.properties;
        if (!isSchema(properties)) continue;
        for (const name of Object.keys(properties)) {
          if ((fold ? foldKey(name) !== foldKey(step.name) : name !== step.name) || !isSchema(properties[name])) continue;
          if (!step.each) {
            next.push([properties, name]);
            continue;
          }
          const array = inline(properties, name);
          if (Array.isArray(array.items) || 'prefixItems' in array) throw new CleanJsonSchemaError(`path ${path} crosses a tuple`);
          if (isSchema(array.items)) next.push([array, 'items']);
        }
      }
      if (next.length === 0) throw new CleanJsonSchemaError(`path ${path}: the schema declares no ${walked}${step.each ? '[] (an array with items)' : ''}`, path);
      places = next;
    }
    for (const [holder, key] of places) holder[key] = stringLeaf(inline(holder, key));
  }
  return printLossless(doc.root!);
}

