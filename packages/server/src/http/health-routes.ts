import type {} from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { withinTimeout, type Publisher } from 'rastro/internal/brokers/message.js';
import type { Database } from 'rastro/internal/db/database.js';
import { isDatabaseUnavailable } from 'rastro/internal/db/database-error.js';
import { readMigrationFiles, type MigrationFile } from 'rastro/internal/db/migrate.js';
import { migrationStatus } from 'rastro/internal/db/migration-status.js';
import { DatabaseError } from 'rastro/internal/errors.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { RETRY_AFTER_SECONDS, sendProblem } from './problem.js';

export interface HealthRouteDeps {
  db: Database;
  store: EventStore;
  /** The publisher of serve's relay: `/readyz` checks its broker, unless it publishes in process. */
  publisher?: Publisher;
  /** The migration files the schema must match. @defaultValue the package's own */
  migrations?: MigrationFile[];
  /** Longest wait for one check. @defaultValue 2000 */
  checkTimeoutMs?: number;
}

/** One readiness check: `ok`, or `failing` with a detail that names no host and no statement. */
export interface Check {
  status: 'ok' | 'failing';
  detail?: string;
  [extra: string]: unknown;
}

const checkSchema = { type: 'object', additionalProperties: true, properties: { status: { type: 'string', enum: ['ok', 'failing'] }, detail: { type: 'string' } } } as const;
const checksSchema = { type: 'object', additionalProperties: checkSchema, description: 'database, migrations and, when serve relays to one, broker' } as const;

/** Why the database failed a check, without its message (which may name tables or hosts). */
function databaseDetail(err: unknown): string {
  if (isDatabaseUnavailable(err)) return 'the database is not reachable';
  if (err instanceof DatabaseError) return `the database failed the check${err.sqlState ? ` (SQLSTATE ${err.sqlState})` : ''}`;
  return `the database did not answer the check: ${(err as Error).message}`;
}

function migrationDetail(status: { pending: string[]; unknown: string[]; changed: string[] }): string {
  const parts = [
    status.pending.length > 0 ? `not applied: ${status.pending.join(', ')} (run rastro migrate)` : '',
    status.unknown.length > 0 ? `applied but unknown to this version: ${status.unknown.join(', ')} (run a newer rastro)` : '',
    status.changed.length > 0 ? `changed since applied: ${status.changed.join(', ')}` : '',
  ];
  return `migrations are not current: ${parts.filter(Boolean).join('; ')}`;
}

function brokerDetail(publisher: Publisher, err: unknown): string {
  const code = (err as { code?: unknown }).code;
  const timedOut = /within \d+ ms/.test(String((err as Error).message));
  return `the ${publisher.kind} broker is not reachable${typeof code === 'string' && /^[A-Z_]+$/.test(code) ? ` (${code})` : timedOut ? ' (no answer in time)' : ''}`;
}

/**
 * `/healthz`, liveness: the process answers, with no call to the database (a restart would not
 * bring the database back). `/readyz`, readiness: the database answers, its migrations match this
 * version's files, and serve's broker, when it has one, is connected; 503 problem+json listing
 * the failing checks otherwise. Both are served without the API key.
 */
export async function healthRoutes(app: FastifyInstance, deps: HealthRouteDeps): Promise<void> {
  const timeoutMs = deps.checkTimeoutMs ?? 2000;
  let files: Promise<MigrationFile[]> | undefined;
  const migrationFiles = () => (deps.migrations ? Promise.resolve(deps.migrations) : (files ??= readMigrationFiles()));

  app.get('/healthz', {
    schema: {
      summary: 'Liveness: the process answers (no database call)',
      operationId: 'getHealth',
      response: { 200: { type: 'object', properties: { status: { type: 'string', enum: ['ok'] }, database: { type: 'string' } } } },
    },
  }, async () => ({ status: 'ok', database: deps.db.kind }));

  async function checkDatabase(): Promise<Check> {
    try {
      return { status: 'ok', kind: deps.db.kind, readerDelay: await withinTimeout(deps.store.readerDelay(), timeoutMs, 'the database') };
    } catch (err) {
      return { status: 'failing', kind: deps.db.kind, detail: databaseDetail(err) };
    }
  }

  async function checkMigrations(): Promise<Check> {
    try {
      const status = await withinTimeout(migrationFiles().then((list) => migrationStatus(deps.db, { schema: deps.store.schema, files: list })), timeoutMs, 'the database');
      if (status.current) return { status: 'ok' };
      return { status: 'failing', detail: migrationDetail(status), pending: status.pending, unknown: status.unknown, changed: status.changed };
    } catch (err) {
      return { status: 'failing', detail: databaseDetail(err) };
    }
  }

  async function checkBroker(publisher: Publisher): Promise<Check> {
    try {
      await (publisher.ping?.(timeoutMs) ?? Promise.resolve());
      return { status: 'ok', kind: publisher.kind };
    } catch (err) {
      return { status: 'failing', kind: publisher.kind, detail: brokerDetail(publisher, err) };
    }
  }

  app.get('/readyz', {
    schema: {
      summary: 'Readiness: database reachable, migrations current, broker connected',
      operationId: 'getReadiness',
      response: {
        200: { type: 'object', properties: { status: { type: 'string', enum: ['ready'] }, checks: checksSchema } },
        503: {
          type: 'object',
          description: 'RFC 9457 problem details, with every check and the names of the failing ones',
          properties: {
            type: { type: 'string' }, title: { type: 'string' }, status: { type: 'integer' }, detail: { type: 'string' }, instance: { type: 'string' },
            code: { type: 'string' }, failing: { type: 'array', items: { type: 'string' } }, checks: checksSchema,
          },
        },
      },
    },
  }, async (_request, reply) => {
    const publisher = deps.publisher && deps.publisher.kind !== 'memory' ? deps.publisher : undefined;
    const [database, migrations, broker] = await Promise.all([checkDatabase(), checkMigrations(), publisher ? checkBroker(publisher) : undefined]);
    const checks: Record<string, Check> = { database, migrations, ...(broker ? { broker } : {}) };
    const failing = Object.entries(checks).filter(([, check]) => check.status !== 'ok');
    if (failing.length === 0) return { status: 'ready', checks };
    reply.header('Retry-After', String(RETRY_AFTER_SECONDS));
    const detail = `not ready: ${failing.map(([name, check]) => `${name} (${check.detail})`).join('; ')}`;
    return sendProblem(reply, 503, detail, { code: 'RASTRO_NOT_READY', failing: failing.map(([name]) => name), checks });
  });
}
