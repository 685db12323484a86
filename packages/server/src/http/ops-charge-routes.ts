import type {} from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { CHARGE_STATUSES, createCharges, type Charges, type ChargeStatus } from 'rastro/internal/charges/charges.js';
import { readFigure } from '../operations/figures.js';
import { chargesInReview } from '../operations/review-queue.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { chargeSchema } from './charge-routes.js';
import { counters, integerQueries, limitQuery, nullableNumber, opsErrorHandler, opsErrors } from './ops-schemas.js';

export interface ChargeOpsRouteDeps {
  store: EventStore;
  /** The charges as configured; without them, charges are read with the default deadline. */
  charges?: Charges;
}

const stalePending = {
  type: 'object',
  properties: {
    count: { type: 'number', description: 'PENDING charges older than the deadline' },
    oldestSeconds: { ...nullableNumber, description: "the oldest one's age; null when there is none" },
    deadlineSeconds: { type: 'number', description: 'how long a charge may stay PENDING before reconciliation asks the acquirer' },
  },
} as const;

/**
 * Charges for the operations console: `GET /ops/charges?status=&limit=`, the same list as
 * `GET /charges` with the counts by status and the stale PENDING figure, so the console reads
 * nothing outside /ops. Charges in review are resolved through their capture's effect
 * (`POST /ops/effects/charge:<id>/resolve` with `done` or `failed`).
 */
export async function chargeOpsRoutes(app: FastifyInstance, deps: ChargeOpsRouteDeps): Promise<void> {
  app.setErrorHandler(opsErrorHandler);
  app.addHook('preValidation', async (request) => integerQueries(request));
  const charges = deps.charges ?? createCharges(deps.store);

  app.get<{ Querystring: { status?: ChargeStatus; queue?: 'review'; limit: number } }>('/ops/charges', {
    schema: {
      operationId: 'listOpsCharges', tags: ['review'],
      summary: 'Charges, newest first, optionally by status (NEEDS_REVIEW: waiting for a person), with the count in each status and the stale PENDING ones',
      querystring: {
        type: 'object',
        properties: {
          status: { type: 'string', enum: [...CHARGE_STATUSES] }, limit: limitQuery,
          queue: { type: 'string', enum: ['review'], description: "review: the charges in review, as the overview's card and rastro_review_queue{queue=\"charges\"} count them (NEEDS_REVIEW, and PENDING ones whose capture is uncertain)" },
        },
        additionalProperties: false,
      },
      response: { 200: { type: 'object', properties: { counts: counters, stalePending, charges: { type: 'array', items: chargeSchema } } }, ...opsErrors },
    },
  }, async (request) => {
    const { queue, ...filter } = request.query;
    const [figure, list] = await Promise.all([readFigure('charges', { store: deps.store, charges }), queue === 'review' ? chargesInReview(charges, filter.limit) : charges.list(filter)]);
    return { counts: figure.byStatus, stalePending: figure.stalePending, charges: list };
  });
}
