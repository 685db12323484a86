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

/** An event as a caller appends it. */
export interface NewEvent<Data extends Record<string, unknown> = Record<string, unknown>> {
  /** A UUID; generated when absent. Re-appending the same id is how a retry stays safe. */
  id?: string;
  type: string;
  data: Data;
  metadata?: EventMetadata;
  /** @defaultValue now */
  occurredAt?: Date;
}

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

/** An event as stored in the log. */
export interface RecordedEvent<Data extends Record<string, unknown> = Record<string, unknown>> extends LogCheckpoint {
  id: string;
  streamId: string;
  streamVersion: number;
  type: string;
  data: Data;
  metadata: EventMetadata;
  occurredAt: Date;
  recordedAt: Date;
}

export interface EventRow {
  position: number;
  tx_order: number;
  stream_id: string;
  stream_version: number;
  id: string;
  type: string;
  data: Record<string, unknown>;
  metadata: EventMetadata;
  occurred_at: Date;
  recorded_at: Date;
}

export function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.id,
    streamId: row.stream_id,
    streamVersion: row.stream_version,
    position: row.position,
    txOrder: row.tx_order,
    type: row.type,
    data: row.data,
    metadata: row.metadata,
    occurredAt: row.occurred_at,
    recordedAt: row.recorded_at,
  };
}
