import type { FastifyInstance } from 'fastify';
import { auditSamples } from 'rastro/internal/audit/audit-samples.js';
import type { Charges } from 'rastro/internal/charges/charges.js';
import { createMetrics, type Metrics } from '../observability/metrics.js';
import { figureSamples, readFigures } from '../operations/figures.js';
import type { Processor } from 'rastro/internal/processing/processor.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';

export interface MetricsRouteDeps {
  store: EventStore;
  metrics: Metrics;
  processors?: ReadonlyMap<string, Processor>;
  /** The charges as configured, for their deadline. */
  charges?: Charges;
}

/**
 * GET /metrics in Prometheus' text format: the figures (read from the database at each scrape,
 * the same as the console's), HTTP request durations and the process's default metrics.
 */
export async function metricsRoutes(app: FastifyInstance, deps: MetricsRouteDeps): Promise<void> {
  app.get('/metrics', {
    schema: {
      operationId: 'getMetrics', tags: ['operations'], summary: 'Prometheus metrics: the figures, HTTP request durations, process metrics',
      response: { 200: { description: 'Prometheus text exposition format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } }, 400: { $ref: 'problem#' }, 401: { $ref: 'problem#' } },
    },
  }, async (_request, reply) => {
    const figures = figureSamples(await readFigures({ store: deps.store, processors: deps.processors, charges: deps.charges }));
    const text = await deps.metrics.scrape([...figures, ...(await auditSamples(deps.store.db, deps.store.schema))]);
    return reply.type(deps.metrics.contentType).send(text);
  });
}

/** Times every request into the histogram, by method, route pattern (not the raw URL) and status; returns the registry. */
export function observeRequests(app: FastifyInstance, given?: Metrics): Metrics {
  const metrics = given ?? createMetrics();
  app.addHook('onResponse', (request, reply, done) => {
    metrics.observeRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
  return metrics;
}
