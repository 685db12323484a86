import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { AccountLedger } from '../accounts/account-ledger.js';
import type { Database } from '../db/database.js';
import type { Charges } from '../charges/charges.js';
import type { Orders } from '../intake/orders.js';
import type { EventStore } from '../store/event-store.js';
import { accountRoutes } from './account-routes.js';
import { bearerAuth, isPublicPath } from './auth.js';
import { chargeRoutes } from './charge-routes.js';
import { observeRequests, operationsApi, type OperationsDeps } from './operations-api.js';
import { openApiConventions } from './openapi-conventions.js';
import { healthRoutes } from './health-routes.js';
import { orderRoutes } from './order-routes.js';
import type { IdempotencyKeys } from './idempotency-keys.js';
import { problemErrorHandler, sendProblem } from './problem.js';
import { traceRequests } from './request-tracing.js';
import { textBoundary } from './text-boundary.js';
import { framingErrorHandler, notFoundOrMethodNotAllowed } from './client-errors.js';

export interface AppDeps extends OperationsDeps {
  db: Database;
  store: EventStore;
  ledger: AccountLedger;
  keys: IdempotencyKeys;
  /** Order intake and normalized orders; without it the order routes are not served. */
  orders?: Orders;
  /** Charges; without it the charge routes are not served. */
  charges?: Charges;
  /** When set, every route but /healthz, /readyz and the console's files needs `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Fastify's logger option: false, or pino options such as `{ level: 'info' }`. @defaultValue false */
  logger?: FastifyServerOptions['logger'];
}

const problemSchema = {
  $id: 'problem',
  type: 'object',
  description: 'RFC 9457 problem details',
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    instance: { type: 'string' },
    code: { type: 'string' },
    field: { type: 'string' },
    runs: { type: 'array', items: { type: 'string' }, description: 'RASTRO_PARKED_EVENT_AMBIGUOUS: the runs the event is parked in' },
  },
} as const;

/**
 * Builds the HTTP application without listening, so tests can `inject()` requests.
 *
 * @example
 * ```ts
 * const app = await buildApp({ db, store, ledger, keys })
 * const res = await app.inject({ method: 'GET', url: '/healthz' })
 * ```
 */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: 64 * 1024,
    requestIdHeader: 'x-request-id',
    genReqId: () => crypto.randomUUID(),
    // Bodies are validated as sent: no coercion of "100" to 100, no silent removal of fields.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    // Malformed URLs and headers Fastify rejects before routing still get a problem document.
    frameworkErrors: (error, _request, reply) => sendProblem(reply, 400, error.message, { code: error.code }),
    // Requests the HTTP parser refuses (framing, header size) get a problem document too.
    clientErrorHandler: framingErrorHandler,
  });
  traceRequests(app);
  app.setErrorHandler(problemErrorHandler);
  notFoundOrMethodNotAllowed(app);
  // JSON only: Fastify would otherwise accept text/plain bodies.
  app.removeContentTypeParser('text/plain');
  textBoundary(app);
  app.addHook('preValidation', async (request, reply) => {
    if (request.method === 'POST' && !/^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '')) {
      return sendProblem(reply, 415, 'send the body as application/json', { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' });
    }
  });
  if (deps.apiKey) app.addHook('onRequest', bearerAuth(deps.apiKey));
  openApiConventions(app, { apiKey: Boolean(deps.apiKey), isPublic: isPublicPath });
  const metrics = observeRequests(app, deps.metrics);

  app.addSchema(problemSchema);
  await app.register(swagger, {
    openapi: {
      info: {
        title: 'rastro', version: '0.1.0', license: { name: 'MIT', url: 'https://opensource.org/licenses/MIT' },
        description: 'Account ledger, payment-provider order intake and operations on an append-only event log.',
      },
      servers: [{ url: '/', description: 'this server' }],
      ...(deps.apiKey ? { components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } } } : {}),
      security: deps.apiKey ? [{ bearer: [] }] : [],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(healthRoutes, { db: deps.db, store: deps.store, publisher: deps.publisher?.() });
  await app.register(accountRoutes, { db: deps.db, ledger: deps.ledger, keys: deps.keys });
  if (deps.orders) await app.register(orderRoutes, { orders: deps.orders });
  if (deps.charges) await app.register(chargeRoutes, { charges: deps.charges });
  await app.register(operationsApi, { ...deps, metrics });
  return app;
}
