import type { Headers } from './ports.ts';

/**
 * Headers as the patched binding takes them (patches/kafka-javascript-2-encoded-headers.patch):
 * one buffer of entries [uint32 LE key length][key, UTF-8][int32 LE value length, -1 = null][value],
 * read in C++ straight into librdkafka's header list. Per header, the binding's own form (an
 * object each, its properties enumerated, the key and value copied three times) cost more than
 * producing the record without headers.
 *
 * A frozen header list is encoded once and its buffer reused: a pipeline stamps the same frozen
 * list on every record that came without headers of its own.
 */
const encodedOnce = new WeakMap<Headers, Buffer>();

export function encodeHeaders(headers: Headers): Buffer {
  const cached = encodedOnce.get(headers);
  if (cached !== undefined) return cached;
  const encoded = encode(headers);
  if (Object.isFrozen(headers)) encodedOnce.set(headers, encoded);
  return encoded;
}

function encode(headers: Headers): Buffer {
  let size = 0;
  for (const h of headers) size += 8 + Buffer.byteLength(h.key, 'utf8') + (h.value?.length ?? 0);
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const h of headers) {
    const keyBytes = out.write(h.key, at + 4, 'utf8');
    out.writeUInt32LE(keyBytes, at);
    at += 4 + keyBytes;
    if (h.value === null) {
      out.writeInt32LE(-1, at);
      at += 4;
    } else {
      out.writeInt32LE(h.value.length, at);
      h.value.copy(out, at + 4);
      at += 4 + h.value.length;
    }
  }
  return out;
}
