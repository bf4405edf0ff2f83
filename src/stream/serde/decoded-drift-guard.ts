import { ValueError } from '../../engine/index.ts';
import { allowedPath } from '../../drift-guard/index.ts';
import { ObjectGuard, type ObjectFinding } from '../../drift-guard/index.ts';
import { StreamError } from '../stream-error.ts';
import type { RecordProtection } from './serde.ts';

// one guard per protection (and set of mapped paths: a schema's tagged fields add to them), not per record
const guards = new WeakMap<RecordProtection, Map<string, ObjectGuard>>();

/**
 * The unmapped guard over decoded records (Avro, Protobuf) for a protection: built once per
 * protection and set of mapped paths (`key` names the set, e.g. a schema id when its tagged
 * fields are mapped too). Field names match exactly, as those formats' names do; so do the
 * allowed paths. Undefined when the pipeline has no guard (`unmapped: pass`).
 */
export function guardFor(protection: RecordProtection, mapped: readonly string[] = protection.maps.map((m) => m.path), key = ''): ObjectGuard | undefined {
  const plan = protection.guard;
  if (plan === undefined) return undefined;
  let byKey = guards.get(protection);
  if (byKey === undefined) guards.set(protection, (byKey = new Map()));
  let guard = byKey.get(key);
  if (guard === undefined) byKey.set(key, (guard = new ObjectGuard(mapped, plan.allow.map(allowedPath), false, plan.threshold)));
  return guard;
}

/** The dead letter of a finding: its path and kind, never its value. */
export function unmappedError(f: ObjectFinding, why = ''): StreamError {
  return new StreamError(
    'UNMAPPED_PERSONAL_DATA',
    `unmapped path ${f.path} holds ${f.kind === 'email' ? 'an' : 'a'} ${f.kind}${f.key ? ' as a map key' : ''}${why}`,
    { path: f.path, kind: f.kind },
  );
}

/**
 * The unmapped guard on a decoded Avro value, before the mapped fields are protected: with action
 * `protect`, a finding of a protected kind whose value is a string is protected in place with
 * the kind's chain (the clean schema keeps the field a string); any other finding — a number (the
 * schema fixes its type: map the field), a kind not protected, or with action `dead-letter` —
 * refuses the record, the first finding naming the dead letter. Returns the paths protected, in
 * walk order, each once.
 */
export function applyGuard(guard: ObjectGuard, protection: RecordProtection, record: unknown): string[] {
  const found = guard.findings(record);
  if (found.length === 0) return [];
  const plan = protection.guard!;
  const chains = found.map((f) => {
    const chain = plan.action === 'protect' && !f.key ? plan.protect.get(f.kind) : undefined;
    const value = f.parent === undefined ? undefined : (f.parent as Record<string | number, unknown>)[f.at!];
    if (chain === undefined) throw unmappedError(f);
    if (typeof value !== 'string')
      throw unmappedError(f, ` as ${value instanceof Uint8Array ? 'bytes' : 'a number'}: its schema fixes the type, map the field to protect it`);
    return chain;
  });
  const paths: string[] = [];
  found.forEach((f, i) => {
    const parent = f.parent as Record<string | number, unknown>;
    try {
      parent[f.at!] = chains[i]!(parent[f.at!] as string);
    } catch (e) {
      if (e instanceof ValueError) throw new StreamError(e.code, `unmapped path ${f.path}: value ${e.message}`, { path: f.path });
      throw e;
    }
    if (!paths.includes(f.path)) paths.push(f.path);
  });
  return paths;
}
