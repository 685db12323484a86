import type { Context } from '@opentelemetry/api';
import { extractTraceContext } from '../observability/trace-context.js';
import { withSpan } from '../observability/tracing.js';
import type { RecordedEvent } from '../store/event.js';
import type { RunContext } from './run-context.js';

/**
 * Runs a handler in a `rastro.handle <event type>` span, a child of the trace the event was
 * appended in (its metadata's `traceparent`), so one trace shows the request and what its events
 * caused. `fn` gets the span's context: effects the handler asks for are its children.
 */
export function handleInSpan(run: RunContext, event: RecordedEvent, fn: (ctx: Context) => Promise<void> | void): Promise<void> {
  const attributes = {
    'rastro.processor': run.processor.name,
    'rastro.run.id': run.runId,
    'rastro.run.mode': run.mode,
    'rastro.run.simulate': run.simulate,
    'rastro.event.id': event.id,
    'rastro.event.type': event.type,
    'rastro.stream.id': event.streamId,
    'rastro.stream.version': event.streamVersion,
    'rastro.position': event.position,
  };
  return withSpan(`rastro.handle ${event.type}`, attributes, (_span, ctx) => fn(ctx), { parent: extractTraceContext(event.metadata) });
}

/** Runs an effect's call in a `rastro.effect <effect type>` span, a child of its handler's span. */
export function effectInSpan<T>(parent: Context | undefined, effectType: string, key: string, eventId: string, call: () => Promise<T>): Promise<T> {
  const attributes = { 'rastro.effect.type': effectType, 'rastro.effect.key': key, 'rastro.event.id': eventId };
  return withSpan(`rastro.effect ${effectType}`, attributes, call, parent ? { parent } : undefined);
}
