import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { AccountLedger } from 'rastro/internal/accounts/account-ledger.js';
import type { Database } from 'rastro/internal/db/database.js';
import type { Charges } from 'rastro/internal/charges/charges.js';
import type { Orders } from 'rastro/internal/intake/orders.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
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
import { loopbackOnly } from './host-guard.js';
import { MAX_PATH_PARAM_LENGTH } from './path-limits.js';
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
  /** Without `apiKey`, the host names served besides the loopback ones (see {@link loopbackOnly}). */
  allowedHosts?: readonly string[];
  /** How long a client may take to send its headers, its whole request, and how long an idle keep-alive lasts. */
  timeouts?: Partial<HttpTimeouts>;
}

/** The timeouts that cut off slow clients, in milliseconds. */
export interface HttpTimeouts {
  /** @defaultValue 10 000 */
  headersMs: number;
  /** The whole request, body included; at least `headersMs`. @defaultValue 30 000 */
  requestMs: number;
  /** @defaultValue 5 000 */
  keepAliveMs: number;
}

const JSON_MEDIA_TYPE = /^application\/json\s*(;|$)/i;

const DEFAULT_TIMEOUTS: HttpTimeouts = { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5_000 };

/** A query parameter whose name says it holds a secret: its value never reaches a log line. */
const SECRET_PARAM = /key|token|secret|password|auth|signature/i;

/** The URL with the value of every secret-looking query parameter replaced, for the log. */
export function redactedUrl(url: string): string {
  const at = url.indexOf('?');
  if (at < 0) return url;
  const query = url
    .slice(at + 1)
    .split('&')
    .map((pair) => {
      const name = pair.split('=')[0] ?? '';
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        // An undecodable name is judged as written.
      }
      return SECRET_PARAM.test(decoded) && pair.includes('=') ? `${name}=[redacted]` : pair;
    });
  return `${url.slice(0, at)}?${query.join('&')}`;
}

/** pino options with the request serializer that redacts secrets in the URL. */
function loggerOptions(logger: AppDeps['logger']): FastifyServerOptions['logger'] {
  if (!logger || typeof logger !== 'object') return logger ?? false;
  const serializers = (logger as { serializers?: Record<string, unknown> }).serializers ?? {};
  return {
    ...logger,
    serializers: {
      req: (request: FastifyRequest) => ({ method: request.method, url: redactedUrl(request.url), host: request.host, remoteAddress: request.ip, remotePort: request.socket?.remotePort }),
      ...serializers,
    },
  } as FastifyServerOptions['logger'];
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
  const timeouts = { ...DEFAULT_TIMEOUTS, ...deps.timeouts };
  const app = Fastify({
    logger: loggerOptions(deps.logger),
    // Slow clients are cut off: headers, then the whole request, must arrive in time (408),
    // and an idle keep-alive connection is closed. Node checks them every second.
    http: { headersTimeout: timeouts.headersMs, connectionsCheckingInterval: 1_000 },
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    bodyLimit: 64 * 1024,
    requestIdHeader: 'x-request-id',
    // Every documented identifier reaches its route (an effect key, `<source>:<orderId>`).
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
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
  // Callback hooks, here and below: on every request, an async one costs a promise and a tick.
  app.addHook('preValidation', (request, reply, done) => {
    if (request.method === 'POST' && !JSON_MEDIA_TYPE.test(request.headers['content-type'] ?? '')) {
      sendProblem(reply, 415, 'send the body as application/json', { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' });
      return;
    }
    done();
  });
  if (deps.apiKey) app.addHook('onRequest', bearerAuth(deps.apiKey));
  else app.addHook('onRequest', loopbackOnly(deps.allowedHosts));
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
  if (deps.orders) await app.register(orderRoutes, { orders: deps.orders, db: deps.db, keys: deps.keys });
  if (deps.charges) await app.register(chargeRoutes, { charges: deps.charges });
  await app.register(operationsApi, { ...deps, metrics });
  return app;
}
