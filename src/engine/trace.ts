import type { CompiledConfig } from './config/compiled.ts';
import { ValueError } from './errors.ts';
import type { KeyProvider } from './key-access/key-provider.ts';
import { createTransformer } from './transformers/registry.ts';
import type { KeyRef } from './transformers/transformer.ts';

/** One step of a traced sequence: its type and what it turned the value into, or why it could not. */
export interface TracedStep {
  type: string;
  output?: string;
  code?: string;
  message?: string;
}

/**
 * Runs the sequence an action configures for a field one step at a time, in the direction the
 * action runs it (inverse: the steps' unprotect in reverse order), and returns every step's
 * output. For the portal's tester, which shows how a value moves through a sequence; the engine's
 * calls run the same transformers through their cached chains. Authorization is the caller's
 * business: this answers for a field and action, not for a caller.
 */
export function traceSteps(
  config: CompiledConfig,
  keys: KeyProvider,
  random: (bytes: Uint8Array) => Uint8Array,
  className: string,
  propertyName: string,
  action: string,
  value: string,
): TracedStep[] {
  const field = config.classes.get(className)?.get(propertyName);
  const plan = field?.actions.get(action);
  const sequence = plan && config.sequences.get(plan.sequence);
  if (!field || !plan || !sequence) return [];
  const keyRef = (name: string): KeyRef => {
    const ref = config.keys.get(name);
    if (!ref) throw new Error(`compiled config lacks key reference ${name}`);
    return ref;
  };
  const bound = sequence.steps.map((step) => ({ type: step.type, t: createTransformer(step, keyRef, { keys, random }).bind(field) }));
  const ordered = plan.direction === 'inverse' ? bound.reverse() : bound;
  const traced: TracedStep[] = [];
  let current = value;
  for (const step of ordered) {
    try {
      current = plan.direction === 'inverse' ? step.t.unprotect(current) : step.t.protect(current);
      traced.push({ type: step.type, output: current });
    } catch (e) {
      if (!(e instanceof ValueError)) throw e;
      traced.push({ type: step.type, code: e.code, message: e.message });
      break;
    }
  }
  return traced;
}
