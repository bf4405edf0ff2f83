import type { CompiledConfig, CompiledField, ActionPlan } from './config/compiled.ts';
import type { KeyRef, Transformer, TransformerDeps } from './transformers/transformer.ts';
import { createTransformer } from './transformers/registry.ts';

/** A field's transformation for one action: the bound steps of a sequence, run in order. */
export type Chain = (value: string) => string;

/**
 * Builds and caches the bound step chain of every (field, action) on first use. Transformers are
 * built once per sequence; binding to a field computes its constants (tweaks, S2V prefixes) once.
 */
export class ChainCache {
  private readonly transformers = new Map<string, Transformer[]>();
  private readonly chains = new WeakMap<CompiledField, Map<string, Chain>>();
  private readonly config: CompiledConfig;
  private readonly deps: TransformerDeps;

  constructor(config: CompiledConfig, deps: TransformerDeps) {
    this.config = config;
    this.deps = deps;
  }

  chain(field: CompiledField, action: string, plan: ActionPlan): Chain {
    let perField = this.chains.get(field);
    if (!perField) this.chains.set(field, (perField = new Map()));
    let chain = perField.get(action);
    if (!chain) perField.set(action, (chain = this.build(field, plan)));
    return chain;
  }

  private build(field: CompiledField, plan: ActionPlan): Chain {
    const bound = this.sequence(plan.sequence).map((t) => t.bind(field));
    if (plan.direction === 'forward') {
      if (bound.length === 1) return bound[0]!.protect;
      return (value) => bound.reduce((v, step) => step.protect(v), value);
    }
    const reversed = bound.slice().reverse();
    if (reversed.length === 1) return reversed[0]!.unprotect;
    return (value) => reversed.reduce((v, step) => step.unprotect(v), value);
  }

  private sequence(name: string): Transformer[] {
    let list = this.transformers.get(name);
    if (!list) {
      const seq = this.config.sequences.get(name);
      if (!seq) throw new Error(`compiled config lacks sequence ${name}`);
      const keyRef = (ref: string): KeyRef => {
        const k = this.config.keys.get(ref);
        if (!k) throw new Error(`compiled config lacks key reference ${ref}`);
        return k;
      };
      list = seq.steps.map((step) => createTransformer(step, keyRef, this.deps));
      this.transformers.set(name, list);
    }
    return list;
  }
}
