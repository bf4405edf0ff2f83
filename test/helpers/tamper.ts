/**
 * A protected value with one character in its middle changed, so it always
 * differs in its decoded bytes. Replacing the tail (`slice(0, -2) + 'AA'`)
 * did not: about one value in a thousand already ends that way, or differs
 * only in the padding bits of the last base64url character.
 */
export function tamperMiddle(value: string): string {
  const at = Math.floor(value.length / 2);
  const swapped = value[at] === 'A' ? 'B' : 'A';
  return `${value.slice(0, at)}${swapped}${value.slice(at + 1)}`;
}
