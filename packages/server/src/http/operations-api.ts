import type { FastifyInstance } from 'fastify';
import type { Publisher } from 'rastro/internal/brokers/message.js';
import type { Charges } from 'rastro/internal/charges/charges.js';
import type { Metrics } from '../observability/metrics.js';
import type { FigureHistory } from '../operations/figure-history.js';
import type { Processor } from 'rastro/internal/processing/processor.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { consoleRoutes } from './console-routes.js';
import { metricsRoutes } from './metrics-routes.js';
import { opsRoutes } from './ops-routes.js';
import { auditOpsRoutes } from './ops-audit-routes.js';
import { trailOpsRoutes } from './ops-trail-routes.js';

export { observeRequests } from './metrics-routes.js';

/** What the operations API, /metrics and the console need beyond the core services. */
export interface OperationsDeps {
  /** Processors the server can replay and retry parked events of; without them those answer 409. */
  processors?: ReadonlyMap<string, Processor>;
  /** The relay's publisher, for retrying parked outbox messages; without one those answer 409. */
  publisher?: () => Publisher | undefined;
  /** The figures sampled over the last hour, for the console's charts. */
  figureHistory?: FigureHistory;
  /** The Prometheus registry; buildApp makes one when none is given. */
  metrics?: Metrics;
}

/** /ops, /metrics and /console. */
export async function operationsApi(app: FastifyInstance, deps: OperationsDeps & { store: EventStore; metrics: Metrics; charges?: Charges }): Promise<void> {
  await app.register(opsRoutes, { store: deps.store, processors: deps.processors, publisher: deps.publisher, history: deps.figureHistory, charges: deps.charges, effectTypes: deps.charges?.effectTypes });
  await app.register(metricsRoutes, { store: deps.store, metrics: deps.metrics, processors: deps.processors, charges: deps.charges });
  await app.register(auditOpsRoutes, { store: deps.store });
  await app.register(trailOpsRoutes, { store: deps.store });
  await app.register(consoleRoutes);
}
