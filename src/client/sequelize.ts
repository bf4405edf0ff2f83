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
  const fields: Field[] = Object.entries(options.fields).map(([attribute, target]) => {
    const dot = target.indexOf('.');
    return dot < 0 ? { attribute, className: options.class, propertyName: target } : { attribute, className: target.slice(0, dot), propertyName: target.slice(dot + 1) };
  });
  const protectRole = options.roles?.protect ? { role: options.roles.protect } : {};
  const unprotectRole = options.roles?.unprotect ? { role: options.roles.unprotect } : {};
  /** the data subject of a row's (or an update's) values: its subject attribute as text */
  const subjectOf = (data: Plain): string | undefined => {
    if (options.subject === undefined) return undefined;
    const value = data[options.subject];
    return typeof value === 'number' || typeof value === 'bigint' ? String(value) : typeof value === 'string' ? value : undefined;
  };
  const subjects = (data: readonly Plain[]) => (options.subject === undefined ? {} : { subject: data.map(subjectOf) });

  /** protects the mapped attributes `pick` selects on each instance, in one call */
  const protectRows = async (rows: readonly Row[], pick: (row: Row, field: Field) => boolean, hookOptions: object) => {
    const bulk = (hookOptions as { [BULK_PROTECTED]?: Record<string, string> })[BULK_PROTECTED] ?? {};
    const targets: { row: Row; field: Field; clear: string }[] = [];
    for (const row of rows) {
      for (const field of fields) {
        const value = row.dataValues[field.attribute];
        if (value === undefined || value === null || !pick(row, field)) continue;
        if (written.get(row)?.get(field.attribute)?.protectedValue === value || bulk[field.attribute] === value) continue;
        if (typeof value !== 'string') throw clientError('FIELD_NOT_STRING', { pointer: `/${field.attribute}` });
        targets.push({ row, field, clear: value });
      }
    }
    if (!targets.length) return;
    const values = await client.protect(targets.map((t) => ({ className: t.field.className, propertyName: t.field.propertyName, value: t.clear })), { ...protectRole, ...subjects(targets.map((t) => t.row.dataValues)) });
    targets.forEach((t, i) => {
      t.row.dataValues[t.field.attribute] = values[i];
      const state = written.get(t.row) ?? new Map();
      state.set(t.field.attribute, { clear: t.clear, protectedValue: values[i]! });
      written.set(t.row, state);
    });
  };

  /** puts the cleartext back into an instance that was just written */
  const restore = (row: Row) => {
    const state = written.get(row);
    if (!state) return;
    for (const [attribute, { clear, protectedValue }] of state) {
      if (row.dataValues[attribute] === protectedValue) {
        row.dataValues[attribute] = clear;
        row._previousDataValues[attribute] = clear;
      }
    }
    written.delete(row);
  };

  model.addHook('beforeCreate', 'veil', async (row: Model, hookOptions: object) => protectRows([row as Row], () => true, hookOptions));
  model.addHook('beforeUpdate', 'veil', async (row: Model, hookOptions: object) => {
    const changed = new Set((row.changed() || []) as string[]);
    await protectRows([row as Row], (_r, field) => changed.has(field.attribute), hookOptions);
  });
  model.addHook('beforeBulkCreate', 'veil', async (rows: Model[], hookOptions: object) => protectRows(rows as Row[], () => true, hookOptions));
  model.addHook('afterCreate', 'veil', (row: Model) => restore(row as Row));
  model.addHook('afterUpdate', 'veil', (row: Model) => restore(row as Row));
  model.addHook('afterBulkCreate', 'veil', (rows: Model[]) => rows.forEach((row) => restore(row as Row)));

  model.addHook('beforeBulkUpdate', 'veil', async (updateOptions: object) => {
    const hookOptions = updateOptions as { attributes?: Plain; [BULK_PROTECTED]?: Record<string, string> };
    const attributes = hookOptions.attributes ?? {};
    const present = fields.filter((f) => attributes[f.attribute] !== undefined && attributes[f.attribute] !== null);
    if (!present.length) return;
    for (const f of present) if (typeof attributes[f.attribute] !== 'string') throw clientError('FIELD_NOT_STRING', { pointer: `/${f.attribute}` });
    const values = await client.protect(present.map((f) => ({ className: f.className, propertyName: f.propertyName, value: attributes[f.attribute] as string })), { ...protectRole, ...subjects(present.map(() => attributes)) });
    // a new object: the caller's values stay as they were
    hookOptions.attributes = { ...attributes };
    hookOptions[BULK_PROTECTED] = {};
    present.forEach((f, i) => {
      hookOptions.attributes![f.attribute] = values[i];
      // with individualHooks, beforeUpdate then sees these values on each row: already protected
      hookOptions[BULK_PROTECTED]![f.attribute] = values[i]!;
    });
  });

  model.addHook('beforeUpsert', 'veil', (upserted: object) => {
    const values = upserted as Plain;
    const mapped = fields.find((f) => values[f.attribute] !== undefined && values[f.attribute] !== null);
    if (mapped) throw clientError('OPERATION_UNSUPPORTED', { pointer: `/${mapped.attribute}` });
  });

  model.addHook('afterFind', 'veil', async (result: unknown) => {
    const rows = (Array.isArray(result) ? result : result ? [result] : []) as (Row | Plain)[];
    const targets: { row: Row | Plain; field: Field; instance: boolean }[] = [];
    const sent: string[] = [];
    for (const row of rows) {
      const instance = isInstance(row);
      const data = instance ? row.dataValues : row;
      for (const field of fields) {
        const value = data[field.attribute];
        if (value === undefined || value === null) continue;
        if (typeof value !== 'string') throw clientError('FIELD_NOT_STRING', { pointer: `/${field.attribute}` });
        targets.push({ row, field, instance });
        sent.push(value);
      }
    }
    if (!targets.length) return;
    const values = await client.unprotect(targets.map((t, i) => ({ className: t.field.className, propertyName: t.field.propertyName, value: sent[i]! })), { ...unprotectRole, ...subjects(targets.map((t) => (t.instance ? (t.row as Row).dataValues : t.row as Plain))) });
    targets.forEach((t, i) => {
      if (t.instance) {
        // as loaded: the cleartext is not a change, so a later save does not write it back
        (t.row as Row).dataValues[t.field.attribute] = values[i];
        (t.row as Row)._previousDataValues[t.field.attribute] = values[i];
      } else {
        (t.row as Plain)[t.field.attribute] = values[i];
      }
    });
  });
}

function isInstance(row: Row | Plain): row is Row {
  return typeof (row as Row).dataValues === 'object' && (row as Row).dataValues !== null && typeof (row as Row).changed === 'function';
}
