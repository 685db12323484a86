import type {} from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { csv } from '../operations/csv.js';
import { OperationTargetNotFoundError } from '../operations/errors.js';
import type { FigureHistory } from '../operations/figure-history.js';
import { readFigure, readFigures } from '../operations/figures.js';
import { replayJobs } from '../operations/replay-jobs.js';
import type { Processor } from 'rastro/internal/processing/processor.js';
import { runDiff, runDiffPage, simulateFailures } from 'rastro/internal/processing/run-diff.js';
import { runStatus } from 'rastro/internal/processing/run-status.js';
import { handledTypes } from 'rastro/internal/processing/read-batch.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { integerQueries, anyObject, counters, limitQuery, nullableNumber, nullableString, opsErrorHandler, opsErrors, problem, runIdPattern } from './ops-schemas.js';
import { reviewRoutes } from './ops-review-routes.js';
import type { Publisher } from 'rastro/internal/brokers/message.js';
import type { EffectTypes } from 'rastro/internal/processing/ledger/effect-type.js';
import type { Charges } from 'rastro/internal/charges/charges.js';
import { chargeOpsRoutes } from './ops-charge-routes.js';

export interface OpsRouteDeps {
  store: EventStore;
  /** Processors this server can run: replays, parked-event retries. Without them those answer 409. */
  processors?: ReadonlyMap<string, Processor>;
  /** The relay's publisher, for retrying parked outbox messages. Without one those answer 409. */
  publisher?: () => Publisher | undefined;
  /** The figures sampled over the last hour; without it the timeline has the current sample only. */
  history?: FigureHistory;
  /** Effect types whose settling writes more (a charge's outbox event), for resolutions. */
  effectTypes?: EffectTypes;
  /** The charges as configured: their list, and the deadline of the stale PENDING figure. */
  charges?: Charges;
}

const tags = ['operations'];
const runIdParams = { type: 'object', properties: { runId: { type: 'string', pattern: runIdPattern } }, required: ['runId'] } as const;

const runSchema = {
  type: 'object',
  properties: {
    runId: { type: 'string' }, processor: { type: 'string' }, mode: { type: 'string', enum: ['live', 'replay'] }, simulate: { type: 'boolean' },
    status: { type: 'string', enum: ['running', 'completed', 'stopped', 'dead'], description: "from its runners' liveness: stopped when its last runner ended it, dead when they are gone without stopping (killed, connection lost)" },
    since: { ...nullableString, format: 'date-time', description: 'when it completed, stopped or died (its last sign of life); null while running' },
    lastSeenAt: { ...nullableString, format: 'date-time', description: 'the last time a runner of it was seen alive' },
    job: { type: 'object', nullable: true, properties: { state: { type: 'string', enum: ['running', 'completed', 'failed'] }, error: nullableString } },
    startedAt: { type: 'string', format: 'date-time' }, updatedAt: { type: 'string', format: 'date-time' },
    window: { type: 'object', properties: { from: { ...nullableString, format: 'date-time' }, to: { ...nullableString, format: 'date-time' }, fromPosition: nullableNumber, toPosition: nullableNumber } },
    total: nullableNumber, done: { type: 'number' }, progress: { ...nullableNumber, description: '0 to 1; null for a live run' },
    counters,
    lag: { type: 'object', properties: { events: { type: 'number' }, seconds: nullableNumber } },
    partitions: {
      type: 'array', description: "a replay's partitions, shared by the processes replaying it: each one's checkpoint and the runner holding it",
      items: {
        type: 'object',
        properties: {
          partition: { type: 'number' }, position: { ...nullableNumber, description: 'the log position its checkpoint reached' },
          updatedAt: { ...nullableString, format: 'date-time' },
          holder: {
            type: 'object', nullable: true, description: 'null when no runner holds it',
            properties: { pid: { type: 'number', description: "the holder's database backend" }, runner: nullableNumber, client: nullableString },
          },
        },
      },
    },
  },
} as const;

const diffRow = { type: 'object', properties: { projection: { type: 'string' }, key: { type: 'string' }, before: { description: 'the row before; null when the run would add it' }, after: { description: 'the row the run would write' } } } as const;
const failureRow = {
  type: 'object',
  properties: {
    eventId: { type: 'string' }, streamId: { type: 'string' }, position: { type: 'number' }, reason: { type: 'string', enum: ['failed', 'waiting'] }, error: nullableString, at: { type: 'string', format: 'date-time' },
  },
} as const;
const diffQuery = {
  type: 'object',
  properties: {
    projection: { type: 'string', minLength: 1, maxLength: 200 },
    key: { type: 'string', maxLength: 200, description: 'text the key contains' },
    limit: limitQuery,
    offset: { type: 'integer', minimum: 0, default: 0 },
  },
  additionalProperties: false,
} as const;

type DiffQuery = { projection?: string; key?: string; limit: number; offset: number };

const replayBody = {
  type: 'object',
  properties: {
    processor: { type: 'string', minLength: 1, maxLength: 100 },
    runId: { type: 'string', pattern: runIdPattern, not: { pattern: '^live:' } },
    simulate: { type: 'boolean', description: 'record a diff and suppress every effect' },
    from: { type: 'string', format: 'date-time', description: 'events that occurred at or after this time' },
    to: { type: 'string', format: 'date-time', description: 'events that occurred before this time' },
    fromPosition: { type: 'integer', minimum: 0 },
    toPosition: { type: 'integer', minimum: 0 },
    maxRate: { type: 'integer', minimum: 1, maximum: 10_000_000, description: 'at most this many events per second, to spare the live traffic (default: no limit)' },
    yieldToLive: { type: 'boolean', description: 'read no batch ahead while live runners or relays run (default: true)' },
    policy: { type: 'object', description: 'effect type → { mode: apply|suppress, onFailure: release|keep }', additionalProperties: anyObject },
  },
  required: ['processor', 'simulate'],
  additionalProperties: false,
} as const;

type ReplayBody = { processor: string; runId?: string; simulate: boolean; from?: string; to?: string; fromPosition?: number; toPosition?: number; maxRate?: number; yieldToLive?: boolean; policy?: Record<string, unknown> };

/**
 * The operations API under /ops: figures and their last hour, runs and their diffs, replays,
 * and (in {@link reviewRoutes}) the review queue. The console uses nothing else.
 */
export async function opsRoutes(app: FastifyInstance, deps: OpsRouteDeps): Promise<void> {
  app.setErrorHandler(opsErrorHandler);
  app.addHook('preValidation', async (request) => integerQueries(request));
  const { store } = deps;
  const typesOf = (name: string) => {
    const processor = deps.processors?.get(name);
    return processor ? handledTypes(processor) : null;
  };
  const runs = runStatus(store, { typesOf });
  const replays = replayJobs(store, deps.processors, { onError: (err, runId) => app.log.warn({ runId, error: { message: (err as Error).message } }, 'replay failed') });
  const figures = () => readFigures({ store, processors: deps.processors, charges: deps.charges });

  app.get('/ops/figures', {
    schema: { operationId: 'getFigures', tags, summary: 'Every operational figure now: relay, processor and normalizer lag, effects by state and in review, charges by status and stale PENDING, parked, readers held back', response: { 200: anyObject, ...opsErrors } },
  }, () => figures());

  app.get<{ Querystring: { minutes?: number } }>('/ops/figures/timeline', {
    schema: {
      operationId: 'getFigureTimeline', tags, summary: 'The figures sampled every 10 s over the last hour (kept in memory), one series per gauge',
      querystring: { type: 'object', properties: { minutes: { type: 'integer', minimum: 1, maximum: 60 } }, additionalProperties: false },
      response: {
        200: {
          type: 'object',
          properties: {
            intervalSeconds: { type: 'number' }, times: { type: 'array', items: { type: 'number' } },
            series: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, help: { type: 'string' }, labels: { type: 'object', additionalProperties: { type: 'string' } }, values: { type: 'array', items: nullableNumber } } } },
          },
        },
        ...opsErrors,
      },
    },
  }, async (request) => {
    if (!deps.history) return { intervalSeconds: 0, times: [], series: [] };
    return deps.history.timeline(request.query.minutes);
  });

  app.get('/ops/normalizer', {
    schema: {
      operationId: 'getNormalizerLag', tags, summary: "The order normalizer's lag: snapshots its live checkpoint has not reached, and the oldest one's age",
      response: { 200: { type: 'object', properties: { eventsBehind: { type: 'number' }, secondsBehind: nullableNumber } }, ...opsErrors },
    },
  }, () => readFigure('normalizer', { store, processors: deps.processors }));

  app.get('/ops/processors', {
    schema: {
      operationId: 'listProcessors', tags, summary: 'The processors this server can replay, with the event types each handles',
      response: { 200: { type: 'object', properties: { processors: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, types: { type: 'array', items: { type: 'string' } } } } } } }, ...opsErrors },
    },
  }, () => ({ processors: [...(deps.processors?.values() ?? [])].map((processor) => ({ name: processor.name, types: handledTypes(processor) })) }));

  app.get<{ Querystring: { mode?: 'live' | 'replay'; limit: number } }>('/ops/runs', {
    schema: {
      operationId: 'listRuns', tags, summary: 'Live and replay runs, newest first: progress, counters, checkpoint lag',
      querystring: { type: 'object', properties: { mode: { type: 'string', enum: ['live', 'replay'] }, limit: limitQuery }, additionalProperties: false },
      response: { 200: { type: 'object', properties: { runs: { type: 'array', items: runSchema } } }, ...opsErrors },
    },
  }, async (request) => ({ runs: (await runs.list(request.query)).map((run) => ({ ...run, job: replays.get(run.runId) ?? null })) }));

  app.get<{ Params: { runId: string } }>('/ops/runs/:runId', {
    schema: { operationId: 'getRun', tags, summary: 'One run: progress, counters, checkpoint lag, and the job when this server started it', params: runIdParams, response: { 200: runSchema, 404: problem, ...opsErrors } },
  }, async (request) => {
    const run = await runs.get(request.params.runId);
    if (!run) throw new OperationTargetNotFoundError('run', request.params.runId);
    return { ...run, job: replays.get(run.runId) ?? null };
  });

  app.post<{ Body: ReplayBody }>('/ops/replays', {
    schema: {
      operationId: 'startReplay', tags, summary: 'Start a replay (simulate: a diff and no effects; real: effects by the policy) in this server; poll the run for its progress',
      body: replayBody,
      response: { 202: { type: 'object', properties: { runId: { type: 'string' }, state: { type: 'string' } } }, 404: problem, 409: problem, 415: problem, ...opsErrors },
    },
  }, async (request, reply) => {
    const { from, to, ...rest } = request.body;
    const job = await replays.start({ ...rest, from: from === undefined ? undefined : new Date(from), to: to === undefined ? undefined : new Date(to) });
    return reply.code(202).header('location', `/ops/runs/${encodeURIComponent(job.runId)}`).send({ runId: job.runId, state: job.state });
  });

  const diffOf = async (runId: string) => {
    if (!(await runs.get(runId))) throw new OperationTargetNotFoundError('run', runId);
  };

  app.get<{ Params: { runId: string }; Querystring: DiffQuery }>('/ops/runs/:runId/diff', {
    schema: {
      operationId: 'getRunDiff', tags, summary: "A simulate run's diff, one row per state key before → after, paged and filtered, with totals per projection",
      params: runIdParams, querystring: diffQuery,
      response: {
        200: {
          type: 'object',
          properties: {
            runId: { type: 'string' }, matching: { type: 'number' }, offset: { type: 'number' }, limit: { type: 'number' },
            totals: { type: 'array', items: { type: 'object', properties: { projection: { type: 'string' }, added: { type: 'number' }, changed: { type: 'number' } } } },
            rows: { type: 'array', items: diffRow },
            failures: {
              type: 'object', description: "events the simulate run could not handle: its own record, never parked in the review queue (first 100, and how many in all)",
              properties: { total: { type: 'number' }, rows: { type: 'array', items: failureRow } },
            },
          },
        },
        404: problem, ...opsErrors,
      },
    },
  }, async (request) => {
    const { runId } = request.params;
    await diffOf(runId);
    const { projection, key, limit, offset } = request.query;
    const [page, failed] = await Promise.all([runDiffPage(store, runId, { projection, keyContains: key, limit, offset }), simulateFailures(store, runId)]);
    return { runId, offset, limit, ...page, failures: { total: failed.total, rows: failed.failures } };
  });

  app.get<{ Params: { runId: string }; Querystring: Omit<DiffQuery, 'limit' | 'offset'> }>('/ops/runs/:runId/diff.csv', {
    schema: {
      operationId: 'getRunDiffCsv', tags, summary: "The whole diff (filtered like /diff) as CSV: projection, key, before, after",
      params: runIdParams,
      querystring: { type: 'object', properties: { projection: diffQuery.properties.projection, key: diffQuery.properties.key }, additionalProperties: false },
      response: { 200: { description: 'RFC 4180 CSV', content: { 'text/csv': { schema: { type: 'string' } } } }, 404: problem, ...opsErrors },
    },
  }, async (request, reply) => {
    const { runId } = request.params;
    await diffOf(runId);
    const { projection, key } = request.query;
    const rows = (await runDiff(store, runId)).filter((row) => (!projection || row.projection === projection) && (!key || row.key.includes(key)));
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${runId.replace(/[^A-Za-z0-9_.-]/g, '_')}-diff.csv"`)
      .send(csv(['projection', 'key', 'before', 'after'], rows.map((row) => [row.projection, row.key, row.before, row.after])));
  });

  await app.register(reviewRoutes, { store, processors: deps.processors, publisher: deps.publisher, effectTypes: deps.effectTypes });
  await app.register(chargeOpsRoutes, { store, charges: deps.charges });
}
