import { context, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { extractTraceContext } from 'rastro/internal/observability/trace-context.js';
import { tracer, tracingActive } from 'rastro/internal/observability/tracing.js';

/** Routes probed often enough that a span each would be noise. */
const UNTRACED = new Set(['/healthz']);

/**
 * Traces every routed request in a server span `HTTP <method> <route>`: a child of the span an
 * outer instrumentation made active, else of the request's `traceparent` header. The span is
 * active while the route's handler runs, so what the handler appends (events carry its trace in
 * their metadata) and writes to the outbox continues the caller's trace. Call it on the root
 * instance before any route is added; its hooks then reach every plugin's routes.
 */
export function traceRequests(app: FastifyInstance): void {
  const spans = new WeakMap<FastifyRequest, { span: Span; ctx: Context }>();

  app.addHook('onRoute', (route) => {
    if (UNTRACED.has(route.url)) return;
    const handler = route.handler as (this: FastifyInstance, ...args: Parameters<RouteHandlerMethod>) => ReturnType<RouteHandlerMethod>;
    route.handler = function tracedHandler(this: FastifyInstance, request, reply) {
      const traced = spans.get(request);
      return traced ? context.with(traced.ctx, handler, this, request, reply) : handler.call(this, request, reply);
    } as RouteHandlerMethod;
  });

  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url;
    // Without an SDK a span is a no-op and no context reaches the handler: nothing to build.
    if (route === undefined || UNTRACED.has(route) || !tracingActive()) return done();
    const active = context.active();
    const parent = trace.getSpanContext(active) ? active : extractTraceContext(request.headers, active);
    const span = tracer.startSpan(
      `HTTP ${request.method} ${route}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'http.route': route, 'url.path': request.url.split('?')[0], 'rastro.request.id': request.id } },
      parent,
    );
    spans.set(request, { span, ctx: trace.setSpan(parent, span) });
    done();
  });

  app.addHook('onResponse', (request, reply, done) => {
    const traced = spans.get(request);
    if (traced) {
      traced.span.setAttribute('http.response.status_code', reply.statusCode);
      // A 4xx is the client's problem, not a failure of the server (OpenTelemetry's HTTP conventions).
      if (reply.statusCode >= 500) traced.span.setStatus({ code: SpanStatusCode.ERROR });
      traced.span.end();
      spans.delete(request);
    }
    done();
  });

  app.addHook('onRequestAbort', (request, done) => {
    spans.get(request)?.span.setStatus({ code: SpanStatusCode.ERROR, message: 'the client aborted the request' });
    spans.get(request)?.span.end();
    spans.delete(request);
    done();
  });
}
