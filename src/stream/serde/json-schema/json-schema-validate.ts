import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { schemaUnfit, StreamError } from '../../stream-error.ts';

/** Checks one record's JSON text; throws RECORD_MALFORMED (not JSON) or RECORD_INVALID (fails the schema). */
export type RecordValidator = (json: Buffer) => void;

type Dialect = '07' | '06' | '2019' | '2020';

/** The dialect a schema's `$schema` names: draft-07 when absent; draft-04 and unknown URIs are refused. */
function dialectOf(schema: Record<string, unknown>): Dialect {
  const uri = schema.$schema;
  if (uri === undefined) return '07';
  if (typeof uri !== 'string') throw schemaUnfit('$schema is not a string');
  const m = /^https?:\/\/json-schema\.org\/(draft-07|draft-06|draft\/2019-09|draft\/2020-12)\/schema#?$/.exec(uri);
  if (!m) throw schemaUnfit(`$schema ${JSON.stringify(uri.slice(0, 100))} is not a supported dialect (draft-06, draft-07, 2019-09, 2020-12)`);
  return ({ 'draft-07': '07', 'draft-06': '06', 'draft/2019-09': '2019', 'draft/2020-12': '2020' } as const)[m[1] as 'draft-07'];
}

/** Every property name the schema declares (`properties`, `required`), anywhere in it: the names an error may show. */
function declaredNames(node: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(node)) for (const n of node) declaredNames(n, out);
  else if (typeof node === 'object' && node !== null) {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'properties' && typeof v === 'object' && v !== null && !Array.isArray(v)) for (const name of Object.keys(v)) out.add(name);
      if (k === 'required' && Array.isArray(v)) for (const name of v) if (typeof name === 'string') out.add(name);
      declaredNames(v, out);
    }
  }
  return out;
}

const unescape = (s: string) => s.replaceAll('~1', '/').replaceAll('~0', '~');

/**
 * The instance path of an error as a JSON pointer that shows only what the schema says: array
 * indices and property names the schema declares; any other segment (a key of a map-like object,
 * which may itself be data) becomes `*`.
 */
function safePointer(instancePath: string, names: Set<string>): string {
  if (instancePath === '') return '';
  return instancePath
    .split('/')
    .slice(1)
    .map((seg) => (/^\d{1,9}$/.test(seg) || names.has(unescape(seg)) ? seg : '*'))
    .map((s) => `/${s}`)
    .join('');
}

/**
 * What an error says without the value: where (instance pointer), which keyword, where in the
 * schema; for `required`, the missing property (a name the schema declares). Never ajv's message,
 * params or data, which may quote the value.
 */
export function describeError(e: ErrorObject, names: Set<string>): string {
  const pointer = safePointer(e.instancePath, names);
  const missing =
    e.keyword === 'required' && typeof e.params.missingProperty === 'string' && names.has(e.params.missingProperty)
      ? ` (missing property ${e.params.missingProperty})`
      : '';
  return `the value at ${pointer === '' ? '(root)' : pointer} fails the schema's ${e.keyword} keyword${missing} at ${e.schemaPath.slice(0, 200)}`;
}

const require = createRequire(import.meta.url);

/**
 * A validator of a raw JSON Schema (ajv 8 with ajv-formats, the dialect its `$schema` names), one
 * ajv instance per schema, so that schemas reusing an `$id` do not collide. Unknown keywords and
 * formats are ignored (strict off), as a registry's other clients may use them; remote references
 * cannot be resolved and fail the compilation.
 */
export async function compileValidator(schemaText: string): Promise<RecordValidator> {
  let schema: unknown;
  try {
    schema = JSON.parse(schemaText);
  } catch {
    throw schemaUnfit('the schema is not JSON');
  }
  if (typeof schema === 'boolean') schema = schema ? {} : { not: {} };
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw schemaUnfit('the schema is not a JSON object');
  const dialect = dialectOf(schema as Record<string, unknown>);
  const [{ default: addFormats }, Ajv] = await Promise.all([
    import('ajv-formats'),
    import(dialect === '2020' ? 'ajv/dist/2020.js' : dialect === '2019' ? 'ajv/dist/2019.js' : 'ajv').then(
      (m: { default: unknown }) => m.default as typeof import('ajv').default,
    ),
  ]);
  const ajv = new Ajv({ strict: false, allErrors: false, logger: false, validateFormats: true });
  if (dialect === '06') ajv.addMetaSchema(require('ajv/dist/refs/json-schema-draft-06.json') as object);
  (addFormats as unknown as (a: typeof ajv) => void)(ajv);
  let check: ValidateFunction;
  try {
    check = ajv.compile(schema as object);
  } catch (e) {
    throw schemaUnfit((e as Error).message.slice(0, 300));
  }
  const names = declaredNames(schema);
  return (json) => {
    let value: unknown;
    try {
      value = JSON.parse(json.toString('utf8'));
    } catch {
      // JSON.parse's own message quotes the text
      throw new StreamError('RECORD_MALFORMED', 'the value is not JSON');
    }
    if (!check(value)) throw new StreamError('RECORD_INVALID', describeError(check.errors![0]!, names));
  };
}
