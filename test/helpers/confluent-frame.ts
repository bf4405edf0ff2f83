/** The Confluent wire framing a producer writes: magic byte 0, the schema id (4 bytes, big-endian), then the payload's parts. */
export function confluentFrame(schemaId: number, ...payload: (Buffer | Uint8Array | string)[]): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(schemaId, 1);
  return Buffer.concat([header, ...payload.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : part))]);
}
