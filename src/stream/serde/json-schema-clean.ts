import { cloneLossless, isJsonObject, parseLossless, printLossless, type LosslessJson, type LosslessObject } from '../../json-bytes/lossless-json.ts';
import { compilePath } from '../record-path.ts';

/** Why a raw JSON Schema cannot get a clean form for the pipeline's paths (the records are dead-lettered). */
export class CleanJsonSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CleanJsonSchemaError';
  }
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

/** The leaf of a protected path: a string (nullable when the raw leaf allowed null), with its title and description. */
function stringLeaf(raw: Schema): Schema {
  const types: unknown[] = Array.isArray(raw.type) ? raw.type : [raw.type];
  const out: Schema = { type: types.includes('null') ? ['string', 'null'] : 'string' };
  for (const k of ['title', 'description', '$comment']) if (k in raw) out[k] = raw[k]!;
  return out;
}

/**
 * The clean JSON Schema of a raw one: every value a pipeline path reaches becomes a string (what
 * a protected value is), keeping the title and description, and null where null was allowed;
 * everything else is the raw schema as it was. Local references on a path are inlined (the
 * definition may be used elsewhere, unprotected). A path the schema does not declare is skipped
 * (its records carry no such field, or the pipeline's `missing` policy decides). A path through a
 * combinator (oneOf, anyOf, allOf, not, if) or a tuple cannot be rewritten safely: it throws.
 *
 * The schema is read and written losslessly (lossless-json.ts): every number in the clean text is
 * the raw text's, digit for digit — `maximum: 18446744073709551615`, an enum of integers beyond
 * 2^53, `1.0`, `1e400` — so a record valid against the raw schema stays valid against the clean
 * one (outside the protected values). Text that is not JSON throws a SyntaxError.
 */
export function deriveCleanJsonSchema(rawText: string, paths: readonly string[]): string {
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
  for (const path of paths) {
    let holder = doc;
    let key = 'root';
    let declared = true;
    for (const step of compilePath(path)) {
      const node = inline(holder, key);
      for (const c of COMBINATORS) if (c in node) throw new CleanJsonSchemaError(`path ${path} crosses ${c}`);
      if (!isSchema(node.properties) || !isSchema(node.properties[step.name])) {
        declared = false;
        break;
      }
      [holder, key] = [node.properties, step.name];
      if (!step.each) continue;
      const array = inline(holder, key);
      if (Array.isArray(array.items) || 'prefixItems' in array) throw new CleanJsonSchemaError(`path ${path} crosses a tuple`);
      if (!isSchema(array.items)) {
        declared = false;
        break;
      }
      [holder, key] = [array, 'items'];
    }
    if (declared) holder[key] = stringLeaf(inline(holder, key));
  }
  return printLossless(doc.root!);
}
