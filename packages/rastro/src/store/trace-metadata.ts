import type { Context } from '@opentelemetry/api';
import { injectTraceContext } from '../observability/trace-context.js';
import type { EventMetadata, NewEvent } from './event.js';

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The events with the trace context of `ctx` in their metadata (`traceparent`, `tracestate`),
 * so whatever handles an event later continues the trace that appended it. An event whose
 * metadata already names a `traceparent` keeps its own; the caller's objects are not changed.
 * Without a span in `ctx` (no SDK, or no trace) the events are returned as they are.
 */
export function withTraceMetadata(events: NewEvent[], ctx: Context): NewEvent[] {
  if (!Array.isArray(events)) return events;
  const trace = injectTraceContext({}, ctx);
  if (trace.traceparent === undefined) return events;
  return events.map((event) => {
    if (!isPlainObject(event)) return event;
    const metadata = event.metadata;
    if (metadata !== undefined && (!isPlainObject(metadata) || metadata.traceparent !== undefined)) return event;
    return { ...event, metadata: { ...metadata, ...trace } };
  });
}

/**
 * Metadata without its trace context: a retried append (an HTTP retry, a broker redelivery)
 * carries the trace of its own attempt, and is still the same event.
 */
export function withoutTraceContext(metadata: EventMetadata): EventMetadata {
  if (!isPlainObject(metadata) || (metadata.traceparent === undefined && metadata.tracestate === undefined)) return metadata;
  const { traceparent: _traceparent, tracestate: _tracestate, ...rest } = metadata;
  return rest;
}
