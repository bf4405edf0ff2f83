import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const DEFAULT = { N: 16384, r: 8, p: 1 } as const;
const KEY_BYTES = 32;

function derive(secret: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(secret, salt, KEY_BYTES, { ...options, maxmem: 256 * options.N! * options.r! }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** `scrypt$N$r$p$salt$hash` with base64url salt and hash: what the configuration stores. */
export async function hashClientSecret(secret: string, options: { N: number; r: number; p: number } = DEFAULT): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(secret, salt, options);
  return `scrypt$${options.N}$${options.r}$${options.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

/** Constant-time check of a presented secret against a stored hash; false for any malformed hash. */
export async function verifyClientSecret(secret: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![N, r, p].every(Number.isSafeInteger) || N < 2 || (N & (N - 1)) !== 0 || N > 1 << 20 || r > 32 || p > 16) return false;
  const expected = Buffer.from(parts[5]!, 'base64url');
  const actual = await derive(secret, Buffer.from(parts[4]!, 'base64url'), { N, r, p });
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}
