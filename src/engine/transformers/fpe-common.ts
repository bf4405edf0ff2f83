import { createHash } from 'node:crypto';
import { Alphabet, NAMED_ALPHABETS, type AlphabetName } from '../fpe/alphabet.ts';
import { bindingLabel, type FieldBinding } from './transformer.ts';

export interface FpeParams {
  alphabet?: AlphabetName;
  customAlphabet?: string;
  keepFirst: number;
  keepLast: number;
  tweakHex?: string;
  binding?: string;
}

export function alphabetOf(params: FpeParams): Alphabet {
  return new Alphabet(params.customAlphabet ?? NAMED_ALPHABETS[params.alphabet ?? 'digits']);
}

/**
 * The step's explicit tweak, or one derived from the field so equal values of different fields
 * protect differently: the first `bytes` of SHA-256(domain || 0x00 || label).
 */
export function tweakFor(params: FpeParams, field: FieldBinding, domain: string, bytes: number): Uint8Array {
  if (params.tweakHex !== undefined) return Uint8Array.from(Buffer.from(params.tweakHex, 'hex'));
  const digest = createHash('sha256').update(domain).update('\0').update(bindingLabel(field, params.binding)).digest();
  return new Uint8Array(digest.subarray(0, bytes));
}
