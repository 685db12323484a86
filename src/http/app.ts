import Fastify, { type FastifyInstance } from 'fastify';
import type { Database } from '../db/database.js';
import type { EventStore } from '../store/event-store.js';
import { problemErrorHandler, sendProblem } from './problem.js';

export interface AppDeps {
  db: Database;
  store: EventStore;
  /** A pino logger, or pino options. @defaultValue no logging */
  logger?: boolean | { level: string };
}

/**
 * Builds the HTTP application without listening, so tests can `inject()` requests.
 *
 * @example
 * ```ts
 * const app = await buildApp({ db, store })
 * const res = await app.inject({ method: 'GET', url: '/healthz' })
 * ```
 */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: 64 * 1024,
    requestIdHeader: 'x-request-id',
    genReqId: () => crypto.randomUUID(),
  });
  app.setErrorHandler(problemErrorHandler);
  app.setNotFoundHandler((request, reply) => sendProblem(reply, 404, `no route for ${request.method} ${request.url.split('?')[0]}`));

  app.get('/healthz', async (_request, reply) => {
    try {
      const delay = await deps.store.readerDelay();
      return { status: 'ok', database: deps.db.kind, readerDelay: delay };
    } catch {
      return sendProblem(reply, 503, 'the database is not reachable');
    }
  });
  return app;
}
