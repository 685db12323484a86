import type {} from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { readFigure } from '../operations/figures.js';
import { nullableNumber, opsErrorHandler, opsErrors } from './ops-schemas.js';

const nullableObject = (properties: Record<string, unknown>) => ({ type: 'object', nullable: true, properties }) as const;
const time = { type: 'string', format: 'date-time' } as const;

/** `GET /ops/trail`: the last seal and the seal's lag, the last digest published, the last verification. */
export async function trailOpsRoutes(app: FastifyInstance, deps: { store: EventStore }): Promise<void> {
  app.setErrorHandler(opsErrorHandler);
  app.get('/ops/trail', {
    schema: {
      operationId: 'getOpsTrail', tags: ['operations'],
      summary: 'The trail: its last sealed block and what waits to be sealed, the last digest published, the last verification and the last clean one',
      response: {
        200: {
          type: 'object',
          properties: {
            lastSeal: nullableObject({ block: { type: 'number' }, hash: { type: 'string' }, sealedAt: time, lastPosition: { type: 'number' } }),
            sealLag: { type: 'object', properties: { events: { type: 'number' }, seconds: nullableNumber } },
            lastDigest: nullableObject({ block: { type: 'number' }, hash: { type: 'string' }, publishedAt: time, target: { type: 'string', description: 'folder:<file> or broker:<kind>' } }),
            lastVerification: nullableObject({ finishedAt: time, full: { type: 'boolean' }, findings: { type: 'number' } }),
            lastCleanVerificationAt: { ...time, nullable: true },
          },
        },
        ...opsErrors,
      },
    },
  }, () => readFigure('trail', { store: deps.store }));
}
