import { Ff1 } from '../crypto/ff1.ts';
import { FpeFormat } from '../fpe/fpe-format.ts';
import { revealKeyBytes } from '../key-access/secret-key.ts';
import { alphabetOf, tweakFor, type FpeParams } from './fpe-common.ts';
import { primitivesOf, type KeyRef, type Transformer, type TransformerDeps } from './transformer.ts';
import { keyVersions } from './versioned-keys.ts';

/** Longest run of alphabet characters one FF1 call takes; longer values get VALUE_TOO_LONG. */
export const FF1_MAX_NUMERALS = 4096;

/**
 * Format-preserving encryption (NIST SP 800-38G FF1). The output has the input's length and
 * alphabet, so it has no room for a key version: the key reference must pin one (checked at
 * load), and rotating the keystore key leaves FF1 data readable until the pin is moved. Scoped to
 * the data subject, it runs under the subject's current key, and the configuration must keep
 * erased subjects refused (a returning person's new key would turn old values into other digits).
 * Default tweak: 8 bytes derived from the field; `tweakHex` reproduces other implementations.
 */
export function ff1(params: FpeParams & { key: KeyRef; luhn: boolean }, deps: TransformerDeps): Transformer {
  const alphabet = alphabetOf(params);
  const format = new FpeFormat(alphabet, {
    keepFirst: params.keepFirst,
    keepLast: params.keepLast,
    luhn: params.luhn,
    minLength: Ff1.minLength(alphabet.radix),
    maxLength: FF1_MAX_NUMERALS,
  });
  const primitives = primitivesOf(deps, params.key);
  return {
    type: 'ff1',
    reversible: true,
    bind(field) {
      const tweak = tweakFor(params, field, 'veil/ff1', 8);
      const ciphers = keyVersions(params.key, deps, (k) => primitives.ff1(revealKeyBytes(k), alphabet.radix, tweak));
      // the pinned version, or the data subject's current key (a scoped reference: erased subjects stay refused)
      const current = () => ciphers.forProtect(ciphers.protectVersion());
      return {
        protect: (value) => format.apply(value, current(), true),
        unprotect: (value) => format.apply(value, current(), false),
        protectMany: (values) => format.applyMany(values, current(), true),
        unprotectMany: (values) => format.applyMany(values, current(), false),
      };
    },
  };
}
