// only the client's public surface: @veil/prisma is built from this file against @veil/client
import { clientError, type FieldMap, type VeilClient } from './index.ts';

export interface VeilPrismaModel {
  /** the configured class of the model's fields, e.g. Customer */
  class: string;
  /** model field → configured property (`email`), or a full `Class.property` */
  fields: Readonly<Record<string, string>>;
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
const RECORD_RESULTS = new Set(['findUnique', 'findUniqueOrThrow', 'findFirst', 'findFirstOrThrow', 'findMany', 'create', 'createManyAndReturn', 'update', 'updateManyAndReturn', 'upsert', 'delete']);

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
export function veilPrisma(client: VeilClient, options: VeilPrismaOptions): { name: string; query: { $allModels: { $allOperations(call: OperationCall): Promise<unknown> } } } {
  const maps = new Map(Object.entries(options.models).map(([model, m]) => [model, fieldMap(m)]));
  const protect = options.roles?.protect ? { role: options.roles.protect } : {};
  const unprotect = options.roles?.unprotect ? { role: options.roles.unprotect } : {};
  return {
    name: 'veil',
    query: {
      $allModels: {
        async $allOperations({ model, operation, args, query }: OperationCall): Promise<unknown> {
          const fields = model === undefined ? undefined : maps.get(model);
          if (!fields) return query(args);
          const written = await protectWrites(client, fields, operation, args ?? {}, protect);
          const result = await query(written);
          if (!RECORD_RESULTS.has(operation) || result === null || typeof result !== 'object') return result;
          return client.unprotectFields(fields, result as object, unprotect);
        },
      },
    },
  };
}

function fieldMap(model: VeilPrismaModel): FieldMap {
  return Object.fromEntries(Object.entries(model.fields).map(([field, property]) => [field, property.includes('.') ? property : `${model.class}.${property}`]));
}

/** The operation's arguments with every written mapped field protected: one call for all its rows. */
async function protectWrites(client: VeilClient, fields: FieldMap, operation: string, args: Record<string, unknown>, protect: { role?: string }): Promise<Record<string, unknown>> {
  const slots: ['data' | 'create' | 'update', boolean][] = DATA_WRITES.has(operation)
    ? [['data', Array.isArray(args.data)]]
    : operation === 'upsert' ? [['create', false], ['update', false]] : [];
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
