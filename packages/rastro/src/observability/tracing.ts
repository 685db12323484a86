import { context, INVALID_SPANID, ProxyTracerProvider, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { injectTraceContext, type TraceHeaders } from './trace-context.js';

/** The instrumentation scope of every rastro span. */
export const TRACER_NAME = 'rastro';

/**
 * rastro's tracer, through the OpenTelemetry API only. With no SDK registered it is the API's
 * no-op tracer; an SDK registered later (before or after this module loads) takes over.
 */
export const tracer = trace.getTracer(TRACER_NAME);

/**
 * Whether a tracing SDK is registered. Without one every span is the API's no-op, so hot paths
 * (a handler per event) may skip building spans and their attributes; an SDK registered later is
 * seen by the next call.
 */
export function tracingActive(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer(TRACER_NAME) !== undefined;
}

export interface WithSpanOptions {
  /** @defaultValue SpanKind.INTERNAL */
  kind?: SpanKind;
  /** The context the span is a child of. @defaultValue the active context */
  parent?: Context;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Runs `fn` in a span named `name`: the span is active while `fn` runs (with a context manager
 * registered), records an exception and an error status when `fn` throws, and ends when `fn`
 * settles. A success leaves the status unset, as the OpenTelemetry specification asks of
 * instrumentation. `fn` gets the span and the context to pass on explicitly (to
 * {@link injectTraceContext}, or as another span's `parent`).
 *
 * With no SDK the span is the API's non-recording span, which carries the parent's span context:
 * no context is built and nothing is recorded.
 *
 * @example
 * ```ts
 * const result = await withSpan('rastro.append', { 'rastro.stream.id': streamId }, async (span) => {
 *   const appended = await append()
 *   span.setAttribute('rastro.stream.version', appended.streamVersion)
 *   return appended
 * })
 * ```
 */
export async function withSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span, ctx: Context) => Promise<T> | T,
  options?: WithSpanOptions,
): Promise<T> {
  const active = context.active();
  const parent = options?.parent ?? active;
  const span = tracer.startSpan(name, { kind: options?.kind ?? SpanKind.INTERNAL, attributes }, parent);
  // The no-op tracer hands back the parent's span context (or the invalid one): nothing to set.
  const spanContext = span.spanContext();
  const unchanged = !span.isRecording() && (spanContext === trace.getSpanContext(parent) || spanContext.spanId === INVALID_SPANID);
  const ctx = unchanged ? parent : trace.setSpan(parent, span);
  try {
    return ctx === active ? await fn(span, ctx) : await context.with(ctx, fn, undefined, span, ctx);
  } catch (err) {
    if (span.isRecording()) {
      span.recordException(err instanceof Error ? err : errorMessage(err));
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(err) });
    }
    throw err;
  } finally {
    span.end();
  }
}

/** Sets attributes on the active span, when there is a recording one. */
export function annotateActiveSpan(attributes: Attributes): void {
  const span = trace.getActiveSpan();
  if (span?.isRecording()) span.setAttributes(attributes);
}

/**
 * A client span around a call to an acquirer (or any payment provider): `rastro.acquirer
 * <operation>`, kind CLIENT, a child of the active span. `fn` gets the `traceparent` and
 * `tracestate` headers to send with the outgoing request, so the provider's side joins the trace;
 * they are empty when there is no trace to continue.
 *
 * @example
 * ```ts
 * const outcome = await ctx.effect('charge.capture', (key) =>
 *   withAcquirerSpan('capture', { 'rastro.effect.key': key }, async (traceHeaders, span) => {
 *     const res = await fetch(`${acquirerUrl}/captures`, {
 *       method: 'POST',
 *       headers: { ...traceHeaders, 'content-type': 'application/json', 'idempotency-key': key },
 *       body: JSON.stringify({ amount }),
 *     })
 *     span.setAttribute('http.response.status_code', res.status)
 *     return res.json()
 *   }),
 * )
 * ```
 */
export function withAcquirerSpan<T>(operation: string, attributes: Attributes, fn: (traceHeaders: TraceHeaders, span: Span) => Promise<T> | T): Promise<T> {
  return withSpan(`rastro.acquirer ${operation}`, { 'rastro.acquirer.operation': operation, ...attributes }, (span, ctx) => fn(injectTraceContext({}, ctx), span), {
    kind: SpanKind.CLIENT,
  });
}
