import type {} from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { auditLog } from 'rastro/internal/audit/audit-log.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { nullableNumber, nullableString, opsErrorHandler, opsErrors } from './ops-schemas.js';

const finding = {
  type: 'object',
  properties: {
    check: { type: 'string' },
    kind: { type: 'string', description: 'stable name of the defect (docs/audit.md)' },
    subject: { type: 'object', properties: { type: { type: 'string', description: 'what the id names: stream, event, trigger, run, effect, relay, message, charge, order, account, dead-letter' }, id: { type: 'string' } } },
    detail: { type: 'string', description: 'what is wrong' },
    action: { type: 'string', description: 'what to do' },
    ageSeconds: { type: 'number', description: 'how long it has been so, where the row says' },
  },
} as const;

const check = {
  type: 'object',
  properties: {
    name: { type: 'string' }, summary: { type: 'string' }, examined: { type: 'number' }, findings: { type: 'number' },
    incremental: { type: 'boolean', description: 'examined only what changed since its last audit' },
    figures: { type: 'object', additionalProperties: nullableNumber },
  },
} as const;

const audit = {
  type: 'object', nullable: true,
  properties: {
    id: { type: 'number' }, startedAt: { type: 'string', format: 'date-time' }, finishedAt: { type: 'string', format: 'date-time' },
    full: { type: 'boolean' }, complete: { type: 'boolean', description: 'every check ran' },
    checks: { type: 'array', items: check }, findings: { type: 'array', items: finding },
  },
} as const;

/** `GET /ops/audit`: the latest audit (serve's schedule, or `rastro audit`) with its findings, and when one last found nothing. */
export async function auditOpsRoutes(app: FastifyInstance, deps: { store: EventStore }): Promise<void> {
  app.setErrorHandler(opsErrorHandler);
  const log = auditLog(deps.store.db, deps.store.schema);
  app.get('/ops/audit', {
    schema: {
      operationId: 'getOpsAudit', tags: ['operations'],
      summary: 'The latest audit: per check what it examined and found, each finding with the row it names and what to do; null before the first audit',
      response: { 200: { type: 'object', properties: { audit, lastCleanAt: { ...nullableString, format: 'date-time', description: 'when an audit of every check last found nothing' } } }, ...opsErrors },
    },
  }, async () => {
    const [latest, lastClean] = await Promise.all([log.latest(), log.lastClean()]);
    return { audit: latest ?? null, lastCleanAt: lastClean?.toISOString() ?? null };
  });
}
