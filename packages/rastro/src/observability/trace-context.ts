import { context, createTraceState, isSpanContextValid, ROOT_CONTEXT, trace, type Context, type SpanContext } from '@opentelemetry/api';

/**
 * W3C trace context as rastro stores it: in event metadata, outbox rows and broker message
 * headers. Plain strings, so it survives JSON, a database row and a broker hop.
 */
export interface TraceHeaders {
  traceparent?: string;
  tracestate?: string;
}

// W3C Trace Context level 1: version-traceid-parentid-flags, lowercase hex. A later version may
// append fields after a dash; version 00 may not, and ff is invalid.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);

/** The span context a `traceparent` value names, or undefined when it is not a valid one. */
export function parseTraceparent(value: unknown): SpanContext | undefined {
  if (typeof value !== 'string' || value.length > 512) return undefined;
  const match = TRACEPARENT.exec(value.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === ZERO_TRACE_ID || spanId === ZERO_SPAN_ID) return undefined;
  return { traceId, spanId, traceFlags: parseInt(flags, 16), isRemote: true };
}

/** The `traceparent` value of a span context (version 00). */
export function formatTraceparent(spanContext: SpanContext): string {
  return `00-${spanContext.traceId}-${spanContext.spanId}-${(spanContext.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/**
 * The context to continue a trace from: `base` with the remote span that `carrier.traceparent`
 * (and `tracestate`) names, or `base` itself when the carrier has no valid one. Reads event
 * metadata, outbox headers and HTTP headers alike (lowercase names).
 *
 * @example
 * ```ts
 * const parent = extractTraceContext(event.metadata)
 * await withSpan('my.work', {}, () => work(), { parent })
 * ```
 */
export function extractTraceContext(carrier: Readonly<Record<string, unknown>> | null | undefined, base: Context = ROOT_CONTEXT): Context {
  if (!carrier) return base;
  const spanContext = parseTraceparent(carrier.traceparent);
  if (!spanContext) return base;
  const state = carrier.tracestate;
  if (typeof state === 'string' && state.length > 0) spanContext.traceState = createTraceState(state);
  return trace.setSpanContext(base, spanContext);
}

/**
 * Writes the `traceparent` (and `tracestate`) of the span in `ctx` into `carrier` and returns
 * it. Writes nothing when `ctx` holds no valid span: without an SDK and a context manager the
 * active context never does, so no trace context is invented.
 *
 * @example
 * ```ts
 * const headers = injectTraceContext({ 'content-type': 'application/json' })
 * await fetch(url, { method: 'POST', headers, body })
 * ```
 */
export function injectTraceContext<Carrier extends Record<string, string>>(carrier: Carrier, ctx: Context = context.active()): Carrier & TraceHeaders {
  const spanContext = trace.getSpanContext(ctx);
  if (!spanContext || !isSpanContextValid(spanContext)) return carrier;
  (carrier as Record<string, string>).traceparent = formatTraceparent(spanContext);
  const state = spanContext.traceState?.serialize();
  if (state) (carrier as Record<string, string>).tracestate = state;
  return carrier;
}

/** The `traceparent` of the span in `ctx` (the active context by default), if there is one. */
export function activeTraceparent(ctx: Context = context.active()): string | undefined {
  const spanContext = trace.getSpanContext(ctx);
  return spanContext && isSpanContextValid(spanContext) ? formatTraceparent(spanContext) : undefined;
}
