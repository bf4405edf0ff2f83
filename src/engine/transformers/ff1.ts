import { Ff1 } from '../crypto/ff1.ts';
import { FpeFormat } from '../fpe/fpe-format.ts';
import { revealKeyBytes } from '../key-access/secret-key.ts';
import { alphabetOf, tweakFor, type FpeParams } from './fpe-common.ts';
import type { KeyRef, Transformer, TransformerDeps } from './transformer.ts';
import { VersionedKeys } from './versioned-keys.ts';

/** Longest run of alphabet characters one FF1 call takes; longer values get VALUE_TOO_LONG. */
export const FF1_MAX_NUMERALS = 4096;

/**
 * Format-preserving encryption (NIST SP 800-38G FF1). The output has the input's length and
 * alphabet, so it has no room for a key version: the key reference must pin one (checked at
 * load), and rotating the keystore key leaves FF1 data readable until the pin is moved.
 * Default tweak: 8 bytes derived from the field; `tweakHex` reproduces other implementations.
 */
export function ff1(params: FpeParams & { key: KeyRef; luhn: boolean }, deps: TransformerDeps): Transformer {
  const alphabet = alphabetOf(params);
  const version = params.key.version!;
  const format = new FpeFormat(alphabet, {
    keepFirst: params.keepFirst,
    keepLast: params.keepLast,
    luhn: params.luhn,
    minLength: Ff1.minLength(alphabet.radix),
    maxLength: FF1_MAX_NUMERALS,
  });
  return {
    type: 'ff1',
    reversible: true,
    bind(field) {
      const tweak = tweakFor(params, field, 'veil/ff1', 8);
      const ciphers = new VersionedKeys(params.key, deps.keys, (k) => new Ff1(revealKeyBytes(k), alphabet.radix, tweak));
      return {
        protect: (value) => format.apply(value, ciphers.forProtect(version), true),
        unprotect: (value) => format.apply(value, ciphers.forProtect(version), false),
        protectMany: (values) => format.applyMany(values, ciphers.forProtect(version), true),
        unprotectMany: (values) => format.applyMany(values, ciphers.forProtect(version), false),
      };
    },
  };
}
