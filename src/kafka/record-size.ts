import type { OutRecord } from './ports.ts';

/** Bytes of a v2 record batch's header (KIP-98 format): the cost of a batch holding one record. */
export const BATCH_OVERHEAD = 61;

function varintBytes(n: number): number {
  let z = n >= 0 ? n * 2 : -n * 2 - 1;
  let size = 1;
  while (z >= 0x80) {
    z = Math.floor(z / 128);
    size++;
  }
  return size;
}

const bytesField = (b: Buffer | null) => (b === null ? 1 : varintBytes(b.length) + b.length);

/**
 * The size of one record inside a record batch, as the broker counts it against
 * max.message.bytes (uncompressed). An upper bound: the timestamp and offset deltas are counted
 * at their largest varint size.
 */
export function recordBytes(r: Pick<OutRecord, 'key' | 'value' | 'headers'>): number {
  const body = 1 + 10 + 5 + bytesField(r.key) + bytesField(r.value) + headersBytes(r.headers);
  return varintBytes(body) + body;
}

/** a frozen header list (a pipeline's own, on every record without headers) is measured once */
const measured = new WeakMap<OutRecord['headers'], number>();

function headersBytes(headers: OutRecord['headers']): number {
  const known = measured.get(headers);
  if (known !== undefined) return known;
  let size = varintBytes(headers.length);
  for (const h of headers) {
    const key = Buffer.byteLength(h.key, 'utf8');
    size += varintBytes(key) + key + bytesField(h.value);
  }
  if (Object.isFrozen(headers)) measured.set(headers, size);
  return size;
}

/** Whether a record, alone in a batch, fits a topic whose max.message.bytes is `limit`. */
export const fitsAlone = (r: Pick<OutRecord, 'key' | 'value' | 'headers'>, limit: number) => BATCH_OVERHEAD + recordBytes(r) <= limit;
