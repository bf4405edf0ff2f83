import type { ActionPlan, CompiledConfig, CompiledField } from './config/compiled.ts';
import { ROLE, UNPROTECT } from './config/compiled.ts';
import { matchRights, type ResolvedRights } from './contexts.ts';
import type { ErrorDetail } from './errors.ts';

/** What authorization decided for one field and action: what to run, or why not. */
export type FieldDecision = { field: CompiledField; plan: ActionPlan } | (Omit<ErrorDetail, 'pointer' | 'request' | 'instance'> & { plan?: undefined });

/**
 * Grant, then field, then the action's sequence: the one decision Engine.plan and Engine.bind make
 * for every field, and the role × field view shows. Pure: no keys, no values.
 */
export function decideField(
  config: CompiledConfig,
  rights: ResolvedRights,
  rightsLabel: string,
  action: string,
  className: string,
  propertyName: string,
): FieldDecision {
  const name = `${className}.${propertyName}`;
  const fieldOf = { className, propertyName };
  if (!rights.grants(action, className, propertyName)) {
    return { ...fieldOf, code: 'ACTION_NOT_GRANTED', message: `${action} on ${name} is not granted to rights context ${rightsLabel}` };
  }
  const field = config.classes.get(className)?.get(propertyName);
  if (!field) return { ...fieldOf, code: 'FIELD_UNKNOWN', message: `${name} is not a configured class.property` };
  const plan = field.actions.get(action);
  if (!plan) return { ...fieldOf, code: 'ACTION_NOT_CONFIGURED', message: `${name} has no sequence for ${action}` };
  return { field, plan };
}

/** What a role gets when it reads a field: the cleartext, a masked or pseudonymized form, or nothing. */
export type FieldAccess = 'clear' | 'masked' | 'pseudonym' | 'protected' | 'denied';

export interface FieldAccessAnswer {
  access: FieldAccess;
  /** the action that gives it (Unprotect, Mask, …), absent when denied */
  action?: string;
  /** the rights contexts the Role evidence alone matches */
  rightsContexts: readonly string[];
  /** why denied: the refusal's code */
  code?: string;
}

/** Best first: a role granted several reading actions on a field gets the most revealing one. */
const RANK: readonly FieldAccess[] = ['clear', 'pseudonym', 'masked', 'protected', 'denied'];

/**
 * What role R gets on a read of class.property, decided by the engine's own code: the rights
 * contexts a call with the single evidence `Role: R` from a caller holding R matches
 * (matchRights), then decideField for Unprotect and for every other non-Protect action the field
 * configures. Unprotect running its sequence inverted gives `clear`; a forward sequence ending in
 * mask or redact gives `masked`, in hmac-sha256 `pseudonym`, in encryption `protected`.
 */
export function fieldAccess(config: CompiledConfig, role: string, className: string, propertyName: string): FieldAccessAnswer {
  const matched = matchRights(config, [{ name: ROLE, value: role }], new Set([role]), { label: 'Role', evidences: '' });
  if (!matched.rights)
    return { access: 'denied', rightsContexts: [], code: (matched.forbidden[0] ?? matched.badRequest[0])?.code ?? 'RIGHTS_CONTEXT_UNMATCHED' };
  const rights = matched.rights;
  const field = config.classes.get(className)?.get(propertyName);
  const actions = [UNPROTECT, ...[...(field?.actions.keys() ?? [])].filter((a) => a !== UNPROTECT && a !== 'Protect')];
  let best: FieldAccessAnswer = { access: 'denied', rightsContexts: rights.names };
  for (const action of actions) {
    const decision = decideField(config, rights, rights.names.join(', '), action, className, propertyName);
    if (!decision.plan) {
      if (action === UNPROTECT) best.code = decision.code;
      continue;
    }
    const access = classify(config, decision.plan);
    if (RANK.indexOf(access) < RANK.indexOf(best.access)) best = { access, action, rightsContexts: rights.names };
  }
  return best;
}

function classify(config: CompiledConfig, plan: ActionPlan): FieldAccess {
  if (plan.direction === 'inverse') return 'clear';
  const steps = config.sequences.get(plan.sequence)?.steps ?? [];
  const last = steps[steps.length - 1]?.type;
  if (last === 'mask' || last === 'redact') return 'masked';
  if (last === 'hmac-sha256') return 'pseudonym';
  return 'protected';
}

/** Every role some rights context names in a Role evidence, sorted. */
export function configuredRoles(config: CompiledConfig): string[] {
  return [...new Set(config.rightsContexts.flatMap((c) => c.evidences.filter(([n]) => n === ROLE).map(([, v]) => v)))].sort();
}
