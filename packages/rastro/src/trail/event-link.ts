import { createHash } from 'node:crypto';

/**
 * An event as its link hashes it: the columns in the form the database gives them, so a
 * verifier with no database computes what `event_link` (migration 0019) computed.
 */
export interface LinkedEvent {
  id: string;
  streamId: string;
  streamVersion: number;
  schemaVersion: number;
  /** Microseconds since 1970, as text (exact beyond 2^53 µs). */
  occurredAtMicros: string;
  recordedAtMicros: string;
  type: string;
  /** The data as PostgreSQL's jsonb text: hashed as it is, never serialized again. */
  data: string;
  metadata: string;
}

const int8 = (n: number | string) => {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64BE(BigInt(n));
  return bytes;
};

const field = (text: string) => {
  const bytes = Buffer.from(text, 'utf8');
  const length = Buffer.alloc(4);
  length.writeInt32BE(bytes.length);
  return [length, bytes];
};

/**
 * The event's link (hex): SHA-256 over the previous event's link (32 zero bytes for a stream's
 * first event) and its content in the layout of docs/trail.md, "The chain".
 */
export function eventLink(prev: string | null, event: LinkedEvent): string {
  const version = Buffer.alloc(2);
  version.writeInt16BE(event.schemaVersion);
  const hash = createHash('sha256')
    .update(prev === null ? Buffer.alloc(32) : Buffer.from(prev, 'hex'))
    .update(Buffer.from(event.id.replace(/-/g, ''), 'hex'))
    .update(int8(event.streamVersion))
    .update(version)
    .update(int8(event.occurredAtMicros))
    .update(int8(event.recordedAtMicros));
  for (const part of [...field(event.streamId), ...field(event.type), ...field(event.data), ...field(event.metadata)]) hash.update(part);
  return hash.digest('hex');
}
