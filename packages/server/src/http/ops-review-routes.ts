import type {} from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import type { Publisher } from 'rastro/internal/brokers/message.js';
import { OperationConflictError, OperationTargetNotFoundError } from '../operations/errors.js';
import { relayAdmin } from 'rastro/internal/outbox/relay-admin.js';
import { effectsWaitingForReview } from '../operations/review-queue.js';
import { EFFECT_STATES, effectLedger, type EffectRecord } from 'rastro/internal/processing/effect-admin.js';
import { parkedEvents } from 'rastro/internal/processing/parking.js';
import type { EffectTypes } from 'rastro/internal/processing/ledger/effect-type.js';
import type { Processor } from 'rastro/internal/processing/processor.js';
import { ValidationError } from 'rastro/internal/errors.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { MAX_EFFECT_KEY_LENGTH } from './path-limits.js';
import { integerQueries, counters, emptyBody, limitQuery, nullableNumber, nullableString, opsErrorHandler, opsErrors, problem, runIdPattern, uuidPattern } from './ops-schemas.js';

export interface ReviewRouteDeps {
  store: EventStore;
  /** Effect types whose settling writes more (a charge's outbox event), for resolutions. */
  effectTypes?: EffectTypes;
  processors?: ReadonlyMap<string, Processor>;
  publisher?: () => Publisher | undefined;
}

const tags = ['review'];
const liveness = {
  status: { type: 'string', enum: ['running', 'stopped', 'dead'], description: "from its runners' liveness: dead when they are gone without stopping" },
  since: { ...nullableString, format: 'date-time', description: 'when it stopped or died (its last sign of life); null while running' },
} as const;
/** Relays park messages in the same table; they are listed under /ops/outbox/parked. */
const RELAY_RUN_PREFIX = 'relay:';
const effectState = { type: 'string', enum: [...EFFECT_STATES] } as const;
const effectSchema = {
  type: 'object',
  properties: {
    key: { type: 'string' }, eventId: { type: 'string' }, effectType: { type: 'string' }, state: effectState, runId: { type: 'string' },
    onFailure: { type: 'string', enum: ['release', 'keep'] }, result: { description: 'what the provider answered (any JSON), or null' }, error: nullableString,
    reservedAt: { type: 'string', format: 'date-time' }, updatedAt: { type: 'string', format: 'date-time' },
    stateSince: { type: 'string', format: 'date-time', description: 'when it entered its state (updatedAt moves at every reconciliation pass)' },
  },
} as const;
const ledgerEffect = {
  effectType: { type: 'string' }, state: effectState, runId: { type: 'string', description: 'the run that made it: this entry\'s, or another of its processor (a replay that handled the event since)' },
} as const;
const parkedSchema = {
  type: 'object',
  properties: {
    processor: { type: 'string' }, runId: { type: 'string' }, eventId: { type: 'string' }, streamId: { type: 'string' }, position: { type: 'number' },
    reason: { type: 'string', enum: ['failed', 'waiting'] }, error: nullableString, parkedAt: { type: 'string', format: 'date-time' },
    effects: { type: 'array', description: "the effect ledger's entries of the event made by any run of its processor (keyed <event id>:<effect type> for every run)", items: { type: 'object', properties: ledgerEffect } },
    settled: { type: 'boolean', description: 'every effect the ledger holds for the event is done: a retry calls none of them again, it only unparks the event' },
  },
} as const;
const parkedMessageSchema = {
  type: 'object',
  properties: {
    relay: { type: 'string' }, messageId: { type: 'string' }, aggregateKey: { type: 'string' }, position: { type: 'number' },
    reason: { type: 'string', enum: ['failed', 'waiting'] }, error: nullableString, parkedAt: { type: 'string', format: 'date-time' },
  },
} as const;
const retryResult = {
  type: 'object',
  properties: {
    action: { type: 'string' }, runId: { type: 'string' }, handled: { type: 'number' }, stillParked: { type: 'number' },
    alreadyDone: { type: 'array', description: 'effects of the handled events the ledger already held done: not called again', items: { type: 'object', properties: { eventId: { type: 'string' }, ...ledgerEffect } } },
  },
} as const;
const messageResult = { type: 'object', properties: { action: { type: 'string' }, published: { type: 'number' }, stillParked: { type: 'number' } } } as const;
const uuidParams = (name: string) => ({ type: 'object', properties: { [name]: { type: 'string', pattern: uuidPattern } }, required: [name] }) as const;
const runEventParams = {
  type: 'object',
  properties: { runId: { type: 'string', pattern: runIdPattern, description: 'the run the event is parked in (the Run column)' }, eventId: { type: 'string', pattern: uuidPattern } },
  required: ['runId', 'eventId'],
} as const;
const actionErrors = { 404: problem, 409: problem, 415: problem, ...opsErrors } as const;

/** The review queue: uncertain effects and effects in review to resolve, parked events and parked outbox messages to retry or skip. */
export async function reviewRoutes(app: FastifyInstance, deps: ReviewRouteDeps): Promise<void> {
  app.setErrorHandler(opsErrorHandler);
  app.addHook('preValidation', async (request) => integerQueries(request));
  const effects = effectLedger(deps.store, { types: deps.effectTypes });
  const parked = parkedEvents(deps.store);
  const relays = relayAdmin(deps.store);

  app.get<{ Querystring: { state?: EffectRecord['state']; queue?: 'review'; limit: number } }>('/ops/effects', {
    schema: {
      operationId: 'listEffects', tags, summary: 'Effect ledger entries, newest first, with the count in each state',
      querystring: {
        type: 'object',
        properties: {
          state: effectState, limit: limitQuery,
          queue: { type: 'string', enum: ['review'], description: "review: the effects waiting for review, as the overview's card and rastro_review_queue{queue=\"effects\"} count them (uncertain or needs-review, charge captures apart)" },
        },
        additionalProperties: false,
      },
      response: { 200: { type: 'object', properties: { counts: counters, effects: { type: 'array', items: effectSchema } } }, ...opsErrors },
    },
  }, async (request) => {
    const { queue, ...filter } = request.query;
    const [counts, list] = await Promise.all([effects.countByState(), queue === 'review' ? effectsWaitingForReview(deps.store, filter.limit) : effects.list(filter)]);
    return { counts, effects: list };
  });

  app.post<{ Params: { key: string }; Body: { as: 'done' | 'failed' | 'retry' } }>('/ops/effects/:key/resolve', {
    schema: {
      operationId: 'resolveEffect', tags,
      summary: "Resolve an uncertain effect or one in review: done (someone confirmed it happened), failed (confirmed it did not; a charge's capture becomes FAILED) or retry (release it: the next run that reaches its event executes it; refused for a charge's capture)",
      params: { type: 'object', properties: { key: { type: 'string', minLength: 1, maxLength: MAX_EFFECT_KEY_LENGTH, description: '<event id>:<effect type>' } }, required: ['key'] },
      body: { type: 'object', properties: { as: { type: 'string', enum: ['done', 'failed', 'retry'] } }, required: ['as'], additionalProperties: false },
      response: { 200: { type: 'object', properties: { key: { type: 'string' }, before: effectState, after: { type: 'string', enum: ['done', 'failed', 'released'] } } }, ...actionErrors },
    },
  }, async (request) => {
    const { key } = request.params;
    const entry = await effects.get(key);
    if (!entry) throw new OperationTargetNotFoundError('effect', key);
    await effects.resolve(key, request.body.as);
    const { as } = request.body;
    return { key, before: entry.state, after: as === 'retry' ? 'released' : as };
  });

  app.get<{ Querystring: { runId?: string; limit: number } }>('/ops/parked-events', {
    schema: {
      operationId: 'listParkedEvents', tags, summary: "Events processors parked (failed), and later events of their streams waiting behind them",
      querystring: { type: 'object', properties: { runId: { type: 'string', minLength: 1, maxLength: 100 }, limit: limitQuery }, additionalProperties: false },
      response: { 200: { type: 'object', properties: { parked: { type: 'array', items: parkedSchema } } }, ...opsErrors },
    },
  }, async (request) => ({ parked: (await parked.list(request.query)).filter((p) => !p.runId.startsWith(RELAY_RUN_PREFIX)) }));


  // The entry is the event's in the run named, or its only one: an event parked in several runs
  // (the live run, the replay fixing it) without a run is refused with the runs (409).
  const parkedAction = (action: 'retry' | 'skip') => async (request: { params: { eventId: string; runId?: string } }) => {
    const { eventId, runId } = request.params;
    const entry = await parked.entry(eventId, { runId }).catch((err: unknown) => {
      if (err instanceof ValidationError) throw new OperationTargetNotFoundError('parked event', runId === undefined ? eventId : `${eventId} in run ${runId}`);
      throw err;
    });
    const processor = deps.processors?.get(entry.processor);
    if (!processor) throw new OperationConflictError(`processor ${entry.processor} is not loaded in this server: start it with --processors <module> or a rastro.config.js`);
    const target = { runId: entry.runId };
    const result = action === 'retry' ? await parked.retry(processor, eventId, target) : await parked.skip(processor, eventId, target);
    return { action, runId: entry.runId, ...result };
  };
  for (const action of ['retry', 'skip'] as const) {
    const summary = action === 'retry' ? "Run the event's stream in that run again from its first parked event, in order" : 'Give up on this event in that run (never handled there), then retry the rest of its stream';
    app.post<{ Params: { runId: string; eventId: string } }>(`/ops/parked-events/:runId/:eventId/${action}`, {
      schema: {
        operationId: action === 'retry' ? 'retryParkedEventOfRun' : 'skipParkedEventOfRun', tags, summary,
        params: runEventParams, body: emptyBody, response: { 200: retryResult, ...actionErrors },
      },
    }, parkedAction(action));
    app.post<{ Params: { eventId: string } }>(`/ops/parked-events/:eventId/${action}`, {
      schema: {
        operationId: action === 'retry' ? 'retryParkedEvent' : 'skipParkedEvent', tags,
        summary: `${summary}, for an event parked in one run only; 409 with the runs when it is parked in several`,
        params: uuidParams('eventId'), body: emptyBody, response: { 200: retryResult, ...actionErrors },
      },
    }, parkedAction(action));
  }

  app.get('/ops/outbox', {
    schema: {
      operationId: 'getOutboxStatus', tags, summary: 'Each relay: messages not yet published, the age of the oldest (its lag), parked messages, counters',
      response: {
        200: {
          type: 'object',
          properties: {
            relays: {
              type: 'array',
              items: { type: 'object', properties: { name: { type: 'string' }, runId: { type: 'string' }, source: { type: 'string' }, partitions: { type: 'number' }, ...liveness, pending: { type: 'number' }, lagMs: nullableNumber, parked: { type: 'number' }, counters } },
            },
          },
        },
        ...opsErrors,
      },
    },
  }, async () => ({ relays: await relays.status() }));

  app.get<{ Querystring: { relay?: string; limit: number } }>('/ops/outbox/parked', {
    schema: {
      operationId: 'listParkedMessages', tags, summary: 'Outbox messages relays parked (refused by the broker), and those waiting behind them',
      querystring: { type: 'object', properties: { relay: { type: 'string', minLength: 1, maxLength: 100 }, limit: limitQuery }, additionalProperties: false },
      response: { 200: { type: 'object', properties: { parked: { type: 'array', items: parkedMessageSchema } } }, ...opsErrors },
    },
  }, async (request) => ({ parked: await relays.parked(request.query) }));

  for (const action of ['retry', 'skip'] as const) {
    app.post<{ Params: { messageId: string } }>(`/ops/outbox/parked/:messageId/${action}`, {
      schema: {
        operationId: action === 'retry' ? 'retryParkedMessage' : 'skipParkedMessage', tags,
        summary: action === 'retry' ? "Publish the message's aggregate again from its first parked message, in order" : 'Give up on this message (never published by its relay), then retry the rest of its aggregate',
        params: uuidParams('messageId'), body: emptyBody, response: { 200: messageResult, ...actionErrors },
      },
    }, async (request) => {
      const { messageId } = request.params;
      if (!(await relays.parked({ limit: 100_000 })).some((m) => m.messageId.toLowerCase() === messageId.toLowerCase())) throw new OperationTargetNotFoundError('parked message', messageId);
      const publisher = deps.publisher?.();
      if (!publisher) throw new OperationConflictError('this server runs no relay (RASTRO_RELAY=off), so it has no broker to publish to; use rastro outbox parked retry');
      const result = action === 'retry' ? await relays.retry(messageId, publisher) : await relays.skip(messageId, publisher);
      return { action, ...result };
    });
  }
}
