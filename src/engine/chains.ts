import type { CompiledConfig, CompiledField, ActionPlan } from './config/compiled.ts';
import type { KeyRef, Transformer, TransformerDeps } from './transformers/transformer.ts';
import { createTransformer } from './transformers/registry.ts';
import { ValueError } from './errors.ts';

/**
 * A field's transformation for one action: the bound steps of a sequence, run in order. Called
 * with one value it returns the output or throws (ValueError for the value's own problem);
 * `many` takes a batch and answers each value's output or ValueError, throwing only for what
 * is not the values' fault (a key that cannot be loaded).
 */
export interface Chain {
  (value: string): string;
  many(values: readonly string[]): (string | ValueError)[];
}

type Step = { one: (value: string) => string; many?: (values: readonly string[]) => (string | ValueError)[] };

function eachValue(one: (value: string) => string, values: readonly string[]): (string | ValueError)[] {
  return values.map((v) => {
    try {
      return one(v);
    } catch (e) {
      if (e instanceof ValueError) return e;
      throw e;
    }
  });
}

/**
 * `first` then `second` on each value, batched: a value `first` refuses skips `second` (a
 * re-protection: unprotect under the value's own key version, protect under the primary one; the
 * cleartext between them stays inside this call).
 */
export function chainThen(first: Chain, second: Chain): Chain {
  return chainOf([
    { one: (v) => first(v), many: (vs) => first.many(vs) },
    { one: (v) => second(v), many: (vs) => second.many(vs) },
  ]);
}

/**
 * A step's batch form, where a ValueError thrown for the whole batch (a subject-scoped key whose
 * subject is erased or not given: no value of the batch can run) is each value's answer.
 */
function manyOf(step: Step): ((values: readonly string[]) => (string | ValueError)[]) | undefined {
  const many = step.many;
  if (!many) return undefined;
  return (values) => {
    try {
      return many(values);
    } catch (e) {
      if (e instanceof ValueError) return values.map(() => e);
      throw e;
    }
  };
}

/**
 * The chain, except that a value it refuses as SUBJECT_ERASED is answered unchanged, and counted:
 * a re-protection carries an erased subject's values through as they are (unreadable wherever
 * they are copied), rather than failing the record or table they sit in.
 */
export function keepingErased(chain: Chain, kept: (count: number) => void): Chain {
  const out = ((value: string) => {
    try {
      return chain(value);
    } catch (e) {
      if (!(e instanceof ValueError && e.code === 'SUBJECT_ERASED')) throw e;
      kept(1);
      return value;
    }
  }) as Chain;
  out.many = (values) => {
    let count = 0;
    const results = chain.many(values).map((r, i) => {
      if (!(r instanceof ValueError && r.code === 'SUBJECT_ERASED')) return r;
      count++;
      return values[i]!;
    });
    if (count) kept(count);
    return results;
  };
  return out;
}

/** The steps in order over many values: a value refused by a step skips the later ones. */
function chainOf(steps: readonly Step[]): Chain {
  const one = steps.length === 1 ? steps[0]!.one : (value: string) => steps.reduce((v, step) => step.one(v), value);
  const chain = ((value: string) => one(value)) as Chain;
  // each step's batch form, wrapped once here rather than per batch
  const batches = steps.map(manyOf);
  const only = steps.length === 1 ? batches[0] : undefined;
  chain.many = (values) => {
    // one batched step (the common case): its answer as it is, no bookkeeping of refusals
    if (only) return only(values);
    let out: (string | ValueError)[] = values.slice();
    for (const [s, step] of steps.entries()) {
      const live: number[] = [];
      const inputs: string[] = [];
      out.forEach((v, i) => {
        if (typeof v === 'string') {
          live.push(i);
          inputs.push(v);
        }
      });
      if (live.length === 0) break;
      const many = batches[s];
      const results = many ? many(inputs) : eachValue(step.one, inputs);
      out = out.slice();
      live.forEach((at, k) => (out[at] = results[k]!));
    }
    return out;
  };
  return chain;
}

/** The chain, asking `check` first on every call (one value or many). */
function gated(chain: Chain, check: () => void): Chain {
  const out = ((value: string) => {
    check();
    return chain(value);
  }) as Chain;
  out.many = (values) => {
    check();
    return chain.many(values);
  };
  return out;
}

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
    const chain =
      plan.direction === 'forward'
        ? chainOf(bound.map((t) => ({ one: t.protect, ...(t.protectMany ? { many: t.protectMany } : {}) })))
        : chainOf(
            bound
              .slice()
              .reverse()
              .map((t) => ({ one: t.unprotect, ...(t.unprotectMany ? { many: t.unprotectMany } : {}) })),
          );
    const keys = this.deps.keys;
    return keys.assertUsable ? gated(chain, () => keys.assertUsable!()) : chain;
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
