/** Numeral-string helpers of SP 800-38G §4.5, for the BigInt paths of FF1 and FF3-1. */
export function numeralsToBigInt(x: ArrayLike<number>, radix: bigint): bigint {
  let r = 0n;
  for (let i = 0; i < x.length; i++) r = r * radix + BigInt(x[i]!);
  return r;
}

export function bigIntToNumerals(x: bigint, radix: bigint, m: number): number[] {
  const out = new Array<number>(m);
  for (let i = m - 1; i >= 0; i--) {
    out[i] = Number(x % radix);
    x /= radix;
  }
  return out;
}

export function bytesToBigInt(bytes: Uint8Array): bigint {
  let r = 0n;
  for (const byte of bytes) r = (r << 8n) | BigInt(byte);
  return r;
}

export function bigIntToBytes(x: bigint, length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = length - 1; i >= 0; i--) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return out;
}

export function bitLength(x: bigint): number {
  return x <= 0n ? 0 : x.toString(2).length;
}

/** SP 800-38G §5.2 domain rule: the smallest length with radix^minlen >= 1,000,000. */
export function domainMinLength(radix: number): number {
  return Math.ceil(Math.log(1_000_000) / Math.log(radix) - 1e-9);
}
