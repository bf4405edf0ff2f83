// only the client's public surface: @veil/prisma is built from this file against @veil/client
import { clientError, type FieldMap, type VeilClient } from './index.ts';

export interface VeilPrismaModel {
  /** the configured class of the model's fields, e.g. Customer */
  class: string;
  /** model field → configured property (`email`), or a full `Class.property` */
  fields: Readonly<Record<string, string>>;
  /**
   * the model field holding each row's data subject id (keys scoped to the subject): its value names
   * the subject of the row's protected fields on writes and reads; a write or a read without it is
   * refused by the service (SUBJECT_REQUIRED) — select it along with the protected fields
   */
  subject?: string;
}

export interface VeilPrismaOptions {
  /** by Prisma model name (`Customer`, as in the schema): the models whose fields are protected */
  models: Readonly<Record<string, VeilPrismaModel>>;
  /** Role evidences: the one that protects on writes, the one that unprotects on reads (default: the client's role) */
  roles?: { protect?: string; unprotect?: string };
}

/** What a Prisma query extension's $allOperations receives (the subset used here). */
interface OperationCall {
  model?: string;
  operation: string;
  args: Record<string, unknown>;
  query: (args: Record<string, unknown>) => Promise<unknown>;
}

/** writes whose `data` (one object or a list) is protected */
const DATA_WRITES = new Set(['create', 'createMany', 'createManyAndReturn', 'update', 'updateMany', 'updateManyAndReturn']);
/** operations whose result is a model record, a list of them or null: unprotected */
const RECORD_RESULTS = new Set([
  'findUnique',
  'findUniqueOrThrow',
  'findFirst',
  'findFirstOrThrow',
  'findMany',
  'create',
  'createManyAndReturn',
  'update',
  'updateManyAndReturn',
  'upsert',
  'delete',
]);

/**
 * A Prisma Client extension (`prisma.$extends(veilPrisma(veil, options))`): a mapped model's
 * fields are protected before every create, update and upsert, and unprotected in what reads and
 * writes return, with one batched /transform call per operation whatever its row count (split
 * only at the service's limits). A plain extension object: no Prisma import, so it fits any
 * Prisma Client 5 or later.
 *
 * Fails closed: a mapped field written with anything but a string (an atomic operation such as
 * `{ set: ... }`, a number) is refused with FIELD_NOT_STRING before the query runs. Not
 * transformed: `where` filters (protect a lookup value first; deterministic sequences only),
 * nested writes and `include`d relations, and raw queries.
 */
export function veilPrisma(
  client: VeilClient,
  options: VeilPrismaOptions,
): { name: string; query: { $allModels: { $allOperations(call: OperationCall): Promise<unknown> } } } {
  const maps = new Map(Object.entries(options.models).map(([model, m]) => [model, { fields: fieldMap(m), subject: subjectOf(m.subject) }]));
  const protect = options.roles?.protect ? { role: options.roles.protect } : {};
  const unprotect = options.roles?.unprotect ? { role: options.roles.unprotect } : {};
  return {
    name: 'veil',
    query: {
      $allModels: {
        async $allOperations({ model, operation, args, query }: OperationCall): Promise<unknown> {
          const mapped = model === undefined ? undefined : maps.get(model);
          if (!mapped) return query(args);
          const written = await protectWrites(client, mapped.fields, operation, args ?? {}, { ...protect, ...mapped.subject });
          const result = await query(written);
          if (!RECORD_RESULTS.has(operation) || result === null || typeof result !== 'object') return result;
          return client.unprotectFields(mapped.fields, result as object, { ...unprotect, ...mapped.subject });
        },
      },
    },
  };
}

/** The `subject` option of protectFields: each row's value of the model's subject field, as text (ids may be numbers). */
function subjectOf(field: string | undefined): { subject?: (row: object) => string } {
  if (field === undefined) return {};
  return {
    subject: (row) => {
      const value = (row as Record<string, unknown>)[field];
      if (value === null || value === undefined) return undefined as unknown as string;
      return typeof value === 'number' || typeof value === 'bigint' ? String(value) : (value as string);
    },
  };
}

function fieldMap(model: VeilPrismaModel): FieldMap {
  return Object.fromEntries(Object.entries(model.fields).map(([field, property]) => [field, property.includes('.') ? property : `${model.class}.${property}`]));
}

/** The operation's arguments with every written mapped field protected: one call for all its rows. */
async function protectWrites(
  client: VeilClient,
  fields: FieldMap,
  operation: string,
  args: Record<string, unknown>,
  protect: { role?: string; subject?: (row: object) => string },
): Promise<Record<string, unknown>> {
  const slots: ['data' | 'create' | 'update', boolean][] = DATA_WRITES.has(operation)
    ? [['data', Array.isArray(args.data)]]
    : operation === 'upsert'
      ? [
          ['create', false],
          ['update', false],
        ]
      : [];
  const rows: object[] = [];
  for (const [slot, list] of slots) {
    const value = args[slot];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'object') throw clientError('FIELD_NOT_STRING', { pointer: `/${slot}` });
    rows.push(...(list ? (value as object[]) : [value]));
  }
  if (rows.length === 0) return args;
  const protectedRows = await client.protectFields(fields, rows, protect);
  const out = { ...args };
  let next = 0;
  for (const [slot, list] of slots) {
    const value = args[slot];
    if (value === undefined || value === null) continue;
    if (list) {
      out[slot] = protectedRows.slice(next, next + (value as object[]).length);
      next += (value as object[]).length;
    } else out[slot] = protectedRows[next++];
  }
  return out;
}
