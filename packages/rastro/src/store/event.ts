import { instant, int8, json } from '../db/values.js';
import type { AnyEvents, EventMap } from './event-types.js';

/** Correlation data carried with an event. Free-form beyond these fields. */
export interface EventMetadata {
  correlationId?: string;
  causationId?: string;
  /** W3C trace context of the work that appended the event: the append span's, when tracing is on. */
  traceparent?: string;
  /** W3C tracestate that goes with `traceparent`, when there is one. */
  tracestate?: string;
  [key: string]: unknown;
}

/** What every appended event may carry besides its type and data. */
export interface NewEventFields {
  /** A UUID; generated when absent. Re-appending the same id is how a retry stays safe. */
  id?: string;
  metadata?: EventMetadata;
  /** @defaultValue now */
  occurredAt?: Date;
}

/**
 * An event as a caller appends it: with declared types ({@link defineEvents}), one of them with
 * its data type; without, any type with any JSON object.
 */
export type NewEvent<E extends EventMap = AnyEvents, K extends keyof E & string = keyof E & string> = { [P in K]: NewEventFields & { type: P; data: E[P] } }[K];

/**
 * A place in the log's global order. Every {@link RecordedEvent} is one, so the last event a
 * reader handled is the checkpoint it resumes after.
 */
export interface LogCheckpoint {
  txOrder: number;
  position: number;
}

/** The start of the log: reading after it returns everything. */
export const LOG_START: LogCheckpoint = Object.freeze({ txOrder: 0, position: 0 });

/** What every event in the log has besides its type and data. */
export interface RecordedEventFields extends LogCheckpoint {
  id: string;
  streamId: string;
  streamVersion: number;
  metadata: EventMetadata;
  occurredAt: Date;
  recordedAt: Date;
}

/**
 * An event as read from the log, its data in the current version of its type: with declared
 * types, a union narrowed by `type`; without, any type with a JSON object.
 */
export type RecordedEvent<E extends EventMap = AnyEvents, K extends keyof E & string = keyof E & string> = { [P in K]: RecordedEventFields & { type: P; data: E[P] } }[K];

/** An event as stored: its data in the version of its type it was appended at. Read paths decode it (store/decode.ts). */
export interface StoredEvent extends RecordedEventFields {
  type: string;
  data: Record<string, unknown>;
  schemaVersion: number;
}

/** The events table's columns, as a read selects them. */
export const EVENT_COLUMNS = 'position, tx_order, stream_id, stream_version, id, type, data, metadata, occurred_at, recorded_at, schema_version';

export interface EventRow {
  position: unknown;
  tx_order: unknown;
  stream_id: string;
  stream_version: unknown;
  id: string;
  type: string;
  data: unknown;
  metadata: unknown;
  occurred_at: unknown;
  recorded_at: unknown;
  schema_version: unknown;
}

/**
 * A row of the events table as a {@link StoredEvent}, whichever driver read it: its values go
 * through db/values.ts, so a query builder's transaction gives what rastro's pool gives.
 */
export function toStoredEvent(row: EventRow): StoredEvent {
  return {
    id: row.id,
    streamId: row.stream_id,
    streamVersion: int8(row.stream_version),
    position: int8(row.position),
    txOrder: int8(row.tx_order),
    type: row.type,
    data: json(row.data),
    metadata: json(row.metadata),
    occurredAt: instant(row.occurred_at),
    recordedAt: instant(row.recorded_at),
    schemaVersion: int8(row.schema_version),
  };
}
