import { irreversible } from './output-format.ts';
import type { Transformer } from './transformer.ts';

/** Replaces every value with a constant. Irreversible; keeps nothing, not even the length. */
export function redact(params: { value: string }): Transformer {
  const field = { protect: () => params.value, unprotect: () => irreversible('redact') };
  return { type: 'redact', reversible: false, bind: () => field };
}
