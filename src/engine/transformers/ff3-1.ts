import { Ff31 } from '../crypto/ff3-1.ts';
import { FpeFormat } from '../fpe/fpe-format.ts';
import { revealKeyBytes } from '../key-access/secret-key.ts';
import { alphabetOf, tweakFor, type FpeParams } from './fpe-common.ts';
import { primitivesOf, type KeyRef, type Transformer, type TransformerDeps } from './transformer.ts';
import { keyVersions } from './versioned-keys.ts';

/**
 * FF3-1 (NIST SP 800-38G Rev. 1), deprecated: only to read and write data shared with systems
 * that already use it. NIST's Rev. 1 second public draft removes FF3-1; use ff1 for new data.
 * Same format rules and key-version pinning as ff1; 56-bit tweak.
 */
export function ff31(params: FpeParams & { key: KeyRef }, deps: TransformerDeps): Transformer {
  const alphabet = alphabetOf(params);
  const format = new FpeFormat(alphabet, {
    keepFirst: params.keepFirst,
    keepLast: params.keepLast,
    luhn: false,
    minLength: Ff31.minLength(alphabet.radix),
    maxLength: Ff31.maxLength(alphabet.radix),
  });
  const primitives = primitivesOf(deps, params.key);
  return {
    type: 'ff3-1',
    reversible: true,
    bind(field) {
      const tweak = tweakFor(params, field, 'veil/ff3-1', 7);
      const ciphers = keyVersions(params.key, deps, (k) => primitives.ff31(revealKeyBytes(k), alphabet.radix, tweak));
      // the pinned version, or the data subject's current key (a scoped reference: erased subjects stay refused)
      const current = () => ciphers.forProtect(ciphers.protectVersion());
      return {
        protect: (value) => format.apply(value, current(), true),
        unprotect: (value) => format.apply(value, current(), false),
        // one call into the native core per batch (the JavaScript cipher takes the values one by one)
        protectMany: (values) => format.applyMany(values, current(), true),
        unprotectMany: (values) => format.applyMany(values, current(), false),
      };
    },
  };
}
