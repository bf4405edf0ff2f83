import type { Model, ModelStatic } from 'sequelize';
// only the client's public surface: @veil/sequelize is built from this file against @veil/client
import { clientError, type VeilClient } from './index.ts';

export interface ProtectModelOptions {
  /** the configured class of the model's fields, e.g. Customer */
  class: string;
  /** model attribute → configured property (`email`), or a full `Class.property` */
  fields: Readonly<Record<string, string>>;
  /** Role evidences: the one that protects on writes, the one that unprotects on reads (default: the client's role) */
  roles?: { protect?: string; unprotect?: string };
  /**
   * the attribute holding each row's data subject id (keys scoped to the subject): it names the
   * subject of the row's protected attributes on writes and reads; a row without it is refused by
   * the service (SUBJECT_REQUIRED), and so is a static Model.update that does not set it
   */
  subject?: string;
}

type Row = Model & { dataValues: Record<string, unknown>; _previousDataValues: Record<string, unknown> };
type Plain = Record<string, unknown>;
interface Field {
  attribute: string;
  className: string;
  propertyName: string;
}

/** what a write hook put in place of which cleartext, so after-hooks can restore it and nothing is protected twice */
const written = new WeakMap<object, Map<string, { clear: string; protectedValue: string }>>();
const BULK_PROTECTED = Symbol('veil.bulkProtected');

/**
 * Installs hooks on a Sequelize model so that its mapped attributes are protected before every
 * INSERT and UPDATE and unprotected after every read, with one batched /transform call per
 * operation whatever its row count (split only at the service's limits):
 *
 * - beforeCreate, beforeUpdate (instance.save/create/update): the mapped attributes being written;
 * - beforeBulkCreate: every row of a bulkCreate in one call;
 * - beforeBulkUpdate: the values of a static Model.update;
 * - afterFind: every row of a find (instances or `raw: true` rows) in one call;
 * - beforeUpsert: refused (OPERATION_UNSUPPORTED) when it carries a mapped attribute, because
 *   Sequelize computes an upsert's values before its hook runs, so the hook cannot protect them.
 *
 * After a write, the instance holds the cleartext again (without another call); the table holds
 * only protected values. Not covered: associated models loaded with `include` (install hooks on
 * them too, though include rows do not pass through their afterFind), raw SQL, and `where`
 * clauses on mapped attributes (protect the lookup value first: deterministic sequences only).
 */
export function protectModel(model: ModelStatic<Model>, client: VeilClient, options: ProtectModelOptions): void {
  const m = mappingOf(client, options);
  model.addHook('beforeCreate', 'veil', async (row: Model, hookOptions: object) => protectRows(m, [row as Row], () => true, hookOptions));
  model.addHook('beforeUpdate', 'veil', async (row: Model, hookOptions: object) => {
    const changed = new Set((row.changed() || []) as string[]);
    await protectRows(m, [row as Row], (_r, field) => changed.has(field.attribute), hookOptions);
  });
  model.addHook('beforeBulkCreate', 'veil', async (rows: Model[], hookOptions: object) => protectRows(m, rows as Row[], () => true, hookOptions));
  model.addHook('afterCreate', 'veil', (row: Model) => restore(row as Row));
  model.addHook('afterUpdate', 'veil', (row: Model) => restore(row as Row));
  model.addHook('afterBulkCreate', 'veil', (rows: Model[]) => rows.forEach((row) => restore(row as Row)));
  model.addHook('beforeBulkUpdate', 'veil', async (updateOptions: object) => protectBulkUpdate(m, updateOptions));
  model.addHook('beforeUpsert', 'veil', (upserted: object) => refuseMappedUpsert(m, upserted as Plain));
  model.addHook('afterFind', 'veil', async (result: unknown) => unprotectFound(m, result));
}

/** What a model's hooks share: its mapped fields, the client, and the roles and subject attribute of their calls. */
interface Mapping {
  client: VeilClient;
  fields: Field[];
  protectRole: { role?: string };
  unprotectRole: { role?: string };
  /** ProtectModelOptions.subject */
  subject?: string;
}

function mappingOf(client: VeilClient, options: ProtectModelOptions): Mapping {
  const fields: Field[] = Object.entries(options.fields).map(([attribute, target]) => {
    const dot = target.indexOf('.');
    return dot < 0
      ? { attribute, className: options.class, propertyName: target }
      : { attribute, className: target.slice(0, dot), propertyName: target.slice(dot + 1) };
  });
  const protectRole = options.roles?.protect ? { role: options.roles.protect } : {};
  const unprotectRole = options.roles?.unprotect ? { role: options.roles.unprotect } : {};
  return { client, fields, protectRole, unprotectRole, subject: options.subject };
}

/** the data subject of a row's (or an update's) values: its subject attribute as text */
function subjectOf(subject: string, data: Plain): string | undefined {
  const value = data[subject];
  return typeof value === 'number' || typeof value === 'bigint' ? String(value) : typeof value === 'string' ? value : undefined;
}

/** the call's subject option: each value's data subject, when the model names a subject attribute */
function subjects(m: Mapping, data: readonly Plain[]): { subject?: (string | undefined)[] } {
  const { subject } = m;
  return subject === undefined ? {} : { subject: data.map((d) => subjectOf(subject, d)) };
}

/** protects the mapped attributes `pick` selects on each instance, in one call */
async function protectRows(m: Mapping, rows: readonly Row[], pick: (row: Row, field: Field) => boolean, hookOptions: object): Promise<void> {
  const bulk = (hookOptions as { [BULK_PROTECTED]?: Record<string, string> })[BULK_PROTECTED] ?? {};
  const targets: { row: Row; field: Field; clear: string }[] = [];
  for (const row of rows) {
    for (const field of m.fields) {
      const value = row.dataValues[field.attribute];
      if (value === undefined || value === null || !pick(row, field)) continue;
      if (written.get(row)?.get(field.attribute)?.protectedValue === value || bulk[field.attribute] === value) continue;
      if (typeof value !== 'string') throw clientError('FIELD_NOT_STRING', { pointer: `/${field.attribute}` });
      targets.push({ row, field, clear: value });
    }
  }
  if (!targets.length) return;
  const values = await m.client.protect(
    targets.map((t) => ({ className: t.field.className, propertyName: t.field.propertyName, value: t.clear })),
    {
      ...m.protectRole,
      ...subjects(
        m,
        targets.map((t) => t.row.dataValues),
      ),
    },
  );
  targets.forEach((t, i) => {
    t.row.dataValues[t.field.attribute] = values[i];
    const state = written.get(t.row) ?? new Map();
    state.set(t.field.attribute, { clear: t.clear, protectedValue: values[i]! });
    written.set(t.row, state);
  });
}

/** puts the cleartext back into an instance that was just written */
function restore(row: Row): void {
  const state = written.get(row);
  if (!state) return;
  for (const [attribute, { clear, protectedValue }] of state) {
    if (row.dataValues[attribute] === protectedValue) {
      row.dataValues[attribute] = clear;
      row._previousDataValues[attribute] = clear;
    }
  }
  written.delete(row);
}

/** a static Model.update: protects the mapped values it sets, in one call */
async function protectBulkUpdate(m: Mapping, updateOptions: object): Promise<void> {
  const hookOptions = updateOptions as { attributes?: Plain; [BULK_PROTECTED]?: Record<string, string> };
  const attributes = hookOptions.attributes ?? {};
  const present = m.fields.filter((f) => attributes[f.attribute] !== undefined && attributes[f.attribute] !== null);
  if (!present.length) return;
  for (const f of present) if (typeof attributes[f.attribute] !== 'string') throw clientError('FIELD_NOT_STRING', { pointer: `/${f.attribute}` });
  const values = await m.client.protect(
    present.map((f) => ({ className: f.className, propertyName: f.propertyName, value: attributes[f.attribute] as string })),
    {
      ...m.protectRole,
      ...subjects(
        m,
        present.map(() => attributes),
      ),
    },
  );
  // a new object: the caller's values stay as they were
  hookOptions.attributes = { ...attributes };
  hookOptions[BULK_PROTECTED] = {};
  present.forEach((f, i) => {
    hookOptions.attributes![f.attribute] = values[i];
    // with individualHooks, beforeUpdate then sees these values on each row: already protected
    hookOptions[BULK_PROTECTED]![f.attribute] = values[i]!;
  });
}

/** an upsert's values are computed before its hook runs, so a mapped attribute in one cannot be protected */
function refuseMappedUpsert(m: Mapping, values: Plain): void {
  const mapped = m.fields.find((f) => values[f.attribute] !== undefined && values[f.attribute] !== null);
  if (mapped) throw clientError('OPERATION_UNSUPPORTED', { pointer: `/${mapped.attribute}` });
}

/** unprotects the mapped attributes of every row a find returned (instances or raw rows), in one call */
async function unprotectFound(m: Mapping, result: unknown): Promise<void> {
  const rows = (Array.isArray(result) ? result : result ? [result] : []) as (Row | Plain)[];
  const targets: { row: Row | Plain; field: Field; instance: boolean }[] = [];
  const sent: string[] = [];
  for (const row of rows) {
    const instance = isInstance(row);
    const data = instance ? row.dataValues : row;
    for (const field of m.fields) {
      const value = data[field.attribute];
      if (value === undefined || value === null) continue;
      if (typeof value !== 'string') throw clientError('FIELD_NOT_STRING', { pointer: `/${field.attribute}` });
      targets.push({ row, field, instance });
      sent.push(value);
    }
  }
  if (!targets.length) return;
  const values = await m.client.unprotect(
    targets.map((t, i) => ({ className: t.field.className, propertyName: t.field.propertyName, value: sent[i]! })),
    {
      ...m.unprotectRole,
      ...subjects(
        m,
        targets.map((t) => (t.instance ? (t.row as Row).dataValues : (t.row as Plain))),
      ),
    },
  );
  targets.forEach((t, i) => {
    if (t.instance) {
      // as loaded: the cleartext is not a change, so a later save does not write it back
      (t.row as Row).dataValues[t.field.attribute] = values[i];
      (t.row as Row)._previousDataValues[t.field.attribute] = values[i];
    } else {
      (t.row as Plain)[t.field.attribute] = values[i];
    }
  });
}

function isInstance(row: Row | Plain): row is Row {
  return typeof (row as Row).dataValues === 'object' && (row as Row).dataValues !== null && typeof (row as Row).changed === 'function';
}
