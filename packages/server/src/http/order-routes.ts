import type {} from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { MAX_ORDER_ID_LENGTH, MAX_ORDER_KEY_LENGTH, MAX_SOURCE_LENGTH, ORDER_STATUSES, parseOrderKey } from 'rastro/internal/intake/order-snapshot.js';
import type { Orders } from 'rastro/internal/intake/orders.js';
import type { Database } from 'rastro/internal/db/database.js';
import { runIdempotent } from './idempotent.js';
import type { IdempotencyKeys } from './idempotency-keys.js';

export interface OrderRouteDeps {
  orders: Orders;
  /** For `Idempotency-Key` on the import route. */
  db: Database;
  keys: IdempotencyKeys;
}

const problem = { $ref: 'problem#' };
const errors = { 400: problem, 401: problem, 404: problem, 413: problem, 415: problem, 422: problem };
const sourceParams = { type: 'object', properties: { source: { type: 'string', maxLength: MAX_SOURCE_LENGTH } }, required: ['source'] } as const;
const idParams = {
  type: 'object',
  properties: { id: { type: 'string', maxLength: MAX_ORDER_KEY_LENGTH, description: `<source>:<orderId>, e.g. pied:260065713; a source of up to ${MAX_SOURCE_LENGTH} characters, an order id of up to ${MAX_ORDER_ID_LENGTH}` } },
  required: ['id'],
} as const;
const anyObject = { type: 'object', additionalProperties: true } as const;

type IdRequest = { Params: { id: string } };

function intakeRoute(app: FastifyInstance, orders: Orders): void {
  app.post<{ Params: { source: string }; Body: Record<string, unknown> }>(
    '/intake/:source/orders',
    {
      schema: {
        operationId: 'receiveOrderSnapshot',
        summary: "Receive a provider's order snapshot (webhook); a redelivery of the same snapshot is stored once",
        params: sourceParams,
        body: {
          type: 'object',
          properties: {
            orderId: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
            status: { type: 'string', enum: [...ORDER_STATUSES] },
            lastUpdate: { type: 'string', nullable: true, description: 'ISO 8601 with an offset, any precision' },
          },
          required: ['orderId', 'status'],
          additionalProperties: true,
        },
        response: { 202: { type: 'object', properties: { eventId: { type: 'string' }, order: { type: 'string' }, streamId: { type: 'string' } } }, ...errors },
      },
    },
    async (request, reply) => {
      const { eventId, streamId, snapshot } = await orders.intake.record(request.params.source, 'webhook', request.body);
      return reply.code(202).send({ eventId, order: `${snapshot.source}:${snapshot.orderId}`, streamId });
    },
  );
}

function readRoute(app: FastifyInstance, orders: Orders): void {
  const state = { type: 'object', additionalProperties: true, nullable: true } as const;
  app.get<IdRequest>(
    '/orders/:id',
    {
      schema: {
        operationId: 'getOrder',
        summary: 'The normalized order and its raw history',
        params: idParams,
        response: { 200: { type: 'object', properties: { id: { type: 'string' }, state, observedAt: { type: 'string', nullable: true }, history: { type: 'array', items: anyObject } } }, ...errors },
      },
    },
    (request) => orders.get(request.params.id),
  );
}

function renormalizeRoute(app: FastifyInstance, orders: Orders): void {
  const summary = { type: 'object', properties: { runId: { type: 'string' }, total: { type: 'integer' }, counters: { type: 'object', additionalProperties: { type: 'integer' } } } } as const;
  app.post<IdRequest>(
    '/orders/:id/renormalize',
    { schema: { operationId: 'renormalizeOrder', summary: "Re-run the normalizer over the order's raw snapshots (never its stored row); send {} as the body", params: idParams, response: { 200: summary, ...errors } } },
    (request) => orders.renormalize(request.params.id),
  );
}

const importHeaders = {
  type: 'object',
  properties: { 'idempotency-key': { type: 'string', description: 'Retries with the same key and body return the first response and record the outcome once.' } },
} as const;

function importRoute(app: FastifyInstance, { orders, db, keys }: OrderRouteDeps): void {
  app.post<IdRequest & { Body: { outcome: 'confirmed' | 'failed'; reference?: string; reason?: string } }>(
    '/orders/:id/import',
    {
      schema: {
        operationId: 'recordOrderImport',
        summary: "Record the back office's import outcome, as an event of the order's stream",
        params: idParams,
        headers: importHeaders,
        body: {
          type: 'object',
          properties: { outcome: { type: 'string', enum: ['confirmed', 'failed'] }, reference: { type: 'string', maxLength: 500 }, reason: { type: 'string', maxLength: 500 } },
          required: ['outcome'],
          additionalProperties: false,
        },
        response: { 201: { type: 'object', properties: { eventId: { type: 'string' }, streamId: { type: 'string' } } }, ...errors },
      },
    },
    (request, reply) =>
      runIdempotent(db, keys, request, reply, async (tx) => {
        const { source, orderId } = parseOrderKey(request.params.id);
        return { status: 201, body: await orders.intake.recordImport({ source, orderId, ...request.body }, { tx }) };
      }),
  );
}

/**
 * Orders from payment providers: webhook intake, the normalized state with its raw history,
 * re-normalizing one order, and recording the back office's import outcome.
 */
export async function orderRoutes(app: FastifyInstance, deps: OrderRouteDeps): Promise<void> {
  const { orders } = deps;
  intakeRoute(app, orders);
  readRoute(app, orders);
  renormalizeRoute(app, orders);
  importRoute(app, deps);
}
