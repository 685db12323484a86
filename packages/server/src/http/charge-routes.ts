import type {} from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { MAX_AMOUNT } from 'rastro/internal/accounts/account.js';
import { CHARGE_STATUSES, type Charge, type Charges, type ChargeStatus } from 'rastro/internal/charges/charges.js';
import { IdempotencyKeyRequiredError } from 'rastro/internal/errors.js';
import { sendProblem } from './problem.js';

export interface ChargeRouteDeps {
  charges: Charges;
}

const problem = { $ref: 'problem#' };
const errors = { 400: problem, 401: problem, 404: problem, 415: problem, 422: problem, 503: problem };
/** A charge in responses (`/charges` and `/ops/charges`). */
export const chargeSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    idempotencyKey: { type: 'string' },
    amountCents: { type: 'integer' },
    customerId: { type: 'string' },
    currency: { type: 'string' },
    status: { type: 'string', enum: [...CHARGE_STATUSES] },
    captureId: { type: 'string', nullable: true },
    reason: { type: 'string', nullable: true, description: 'Why it failed, or what is still unknown' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    statusSince: { type: 'string', format: 'date-time', description: 'when it entered its status: PENDING since its creation, otherwise since its capture settled' },
  },
} as const;

/** Finished charges answer 201; PENDING and NEEDS_REVIEW ones 202, left to reconciliation. */
function statusCode(value: Charge): number {
  return value.status === 'CAPTURED' || value.status === 'FAILED' ? 201 : 202;
}

/** Charges: `POST /charges` with a required Idempotency-Key, `GET /charges/{id}`, `GET /charges?status=`. */
export async function chargeRoutes(app: FastifyInstance, { charges }: ChargeRouteDeps): Promise<void> {
  app.post<{ Body: unknown }>(
    '/charges',
    {
      // The body is checked by validateChargeRequest, whose errors name the field.
      attachValidation: true,
      schema: {
        summary: 'Charge a customer: the intent is committed before the acquirer is called',
        description:
          'Requires an Idempotency-Key. A retry with the same key and body returns the charge as it stands (Idempotent-Replayed: true) and never captures again: 201 when CAPTURED or FAILED, 202 while PENDING or NEEDS_REVIEW (reconciliation asks the acquirer).',
        headers: {
          type: 'object',
          properties: { 'idempotency-key': { type: 'string', description: 'Required: 1 to 255 visible ASCII characters, unique per charge; also sent to the acquirer.' } },
        },
        body: {
          type: 'object',
          properties: {
            amountCents: { type: 'integer', minimum: 1, maximum: MAX_AMOUNT },
            customerId: { type: 'string', minLength: 1, maxLength: 200 },
            currency: { type: 'string', pattern: '^[A-Z]{3}$', default: 'BRL' },
          },
          required: ['amountCents', 'customerId'],
          additionalProperties: false,
        },
        response: { 201: chargeSchema, 202: chargeSchema, ...errors },
      },
    },
    async (request, reply) => {
      const header = request.headers['idempotency-key'];
      if (header === undefined) throw new IdempotencyKeyRequiredError();
      if (!charges.canCreate) return sendProblem(reply, 503, 'no acquirer is configured: charges can be read but not created (set RASTRO_ACQUIRER_URL)', { code: 'RASTRO_NO_ACQUIRER' });
      const { charge: value, replayed } = await charges.start(request.body, Array.isArray(header) ? header.join(',') : header);
      if (replayed) reply.header('Idempotent-Replayed', 'true');
      reply.header('Location', `/charges/${value.id}`);
      return reply.code(statusCode(value)).send(value);
    },
  );

  app.get<{ Params: { id: string } }>(
    '/charges/:id',
    {
      schema: {
        summary: 'A charge and its status',
        params: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        response: { 200: chargeSchema, ...errors },
      },
    },
    (request) => charges.get(request.params.id),
  );

  app.get<{ Querystring: { status?: ChargeStatus; limit?: string; after?: string } }>(
    '/charges',
    {
      schema: {
        summary: 'Charges, newest first, optionally by status, a page at a time',
        description: 'A full page carries `next`: pass it as `after` for the page that follows. Charges created meanwhile neither repeat nor hide one.',
        querystring: {
          type: 'object',
          properties: {
            status: { type: 'string', enum: [...CHARGE_STATUSES] },
            limit: { type: 'string', pattern: '^([1-9]\\d{0,2}|1000)$', description: '1 to 1000, default 100.' },
            after: { type: 'string', format: 'uuid', description: 'The `next` of the previous page: the id of its last charge.' },
          },
          additionalProperties: false,
        },
        response: {
          200: {
            type: 'object',
            properties: {
              charges: { type: 'array', items: chargeSchema },
              next: { type: 'string', nullable: true, description: 'The cursor of the next page, or null on the last one.' },
            },
          },
          ...errors,
        },
      },
    },
    async (request) => {
      const limit = request.query.limit ? Number(request.query.limit) : 100;
      const page = await charges.list({ status: request.query.status, limit, after: request.query.after });
      return { charges: page, next: page.length === limit ? page[page.length - 1]!.id : null };
    },
  );
}
