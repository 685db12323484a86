import { DatabaseError, DatabaseUnavailableError, RastroError, SchemaNotMigratedError } from '../errors.js';

interface DriverError {
  message?: unknown;
  code?: unknown;
  constraint?: unknown;
  errors?: unknown;
  cause?: unknown;
}

/** Socket errors of a connection that could not be made or was lost, with the words a log shows. */
const SOCKET_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'connection broken',
  ECONNABORTED: 'connection aborted',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
};

/**
 * SQLSTATEs of a server that cannot serve this connection now: class 08 (connection exception),
 * 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up, shutting
 * down, in recovery), 53300 too_many_connections.
 */
const UNAVAILABLE_STATES: Record<string, string> = {
  '57P01': 'the server is shutting down',
  '57P02': 'the server crashed',
  '57P03': 'the server is not accepting connections yet',
  '53300': 'the server has no connection slot left',
};

/** What `pg` and `pg-pool` say, without a code, when a connection is lost or cannot be had in time. */
const DRIVER_MESSAGES: [RegExp, string][] = [
  [/^Connection terminated/, 'connection terminated'],
  [/^timeout exceeded when trying to connect/, 'no connection within the connect timeout'],
  [/^Client has encountered a connection error and is not queryable/, 'connection lost'],
  [/^Query read timeout/, 'query read timeout'],
];

/** The tables rastro's migrations create (and the migrations table): a missing one means an unmigrated schema. */
export const RASTRO_TABLES: ReadonlySet<string> = new Set([
  'migrations', 'streams', 'events', 'store_settings', 'snapshots', 'idempotency_keys', 'projections', 'effects',
  'processor_runs', 'processor_checkpoints', 'run_counters', 'replay_diffs', 'parked_events', 'processor_runners',
  'outbox_aggregates', 'outbox', 'outbox_default', 'inbox_dead_letters', 'charges', 'audit_checkpoints', 'audit_runs',
  'audit_findings', 'simulate_failures', 'event_hashes', 'trail_blocks', 'trail_verifications', 'trail_digests', 'subject_keys', 'forgotten_subjects',
]);

/** The server's words for SQLSTATE 42P01 on a schema-qualified table: rastro always qualifies its own. */
const UNDEFINED_TABLE = /^relation "([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)" does not exist$/;

/** The schema missing one of rastro's tables that an undefined_table error names, if it does. */
function unmigratedSchema(sqlState: string | undefined, message: string): string | undefined {
  if (sqlState !== '42P01') return undefined;
  const match = UNDEFINED_TABLE.exec(message);
  return match && RASTRO_TABLES.has(match[2]!) ? match[1] : undefined;
}

function asDriverError(err: unknown): DriverError {
  return (typeof err === 'object' && err !== null ? err : {}) as DriverError;
}

/** The reason a driver error means the database is unreachable, or undefined when it is about the statement. */
function unavailableReason(err: unknown, depth = 0): string | undefined {
  if (depth > 4) return undefined;
  const driver = asDriverError(err);
  const code = typeof driver.code === 'string' ? driver.code : undefined;
  if (code !== undefined) {
    if (SOCKET_ERRORS[code]) return SOCKET_ERRORS[code];
    if (UNAVAILABLE_STATES[code]) return UNAVAILABLE_STATES[code];
    if (/^08[0-9A-Z]{3}$/.test(code)) return `connection exception ${code}`;
  }
  const message = typeof driver.message === 'string' ? driver.message : '';
  for (const [pattern, reason] of DRIVER_MESSAGES) if (pattern.test(message)) return reason;
  // Node reports a connect to several addresses (localhost: ::1 and 127.0.0.1) as an AggregateError.
  if (Array.isArray(driver.errors)) {
    for (const inner of driver.errors) {
      const reason = unavailableReason(inner, depth + 1);
      if (reason) return reason;
    }
  }
  return driver.cause === undefined ? undefined : unavailableReason(driver.cause, depth + 1);
}

/**
 * True when `err` says the database cannot be reached (refused, reset, timed out, shutting
 * down, out of connections), as opposed to refusing this statement. The one place this is
 * decided: the HTTP layer answers 503 for it, runners back off and renew their sessions.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  return err instanceof DatabaseUnavailableError || (!(err instanceof RastroError) && unavailableReason(err) !== undefined);
}

/**
 * Turns a driver error into a {@link DatabaseError} that keeps the SQLSTATE and constraint but
 * drops what may hold data: the statement, bound values and the server's DETAIL line. A lost or
 * refused connection becomes a {@link DatabaseUnavailableError}, whose message names the reason
 * but not the host. A missing rastro table becomes a {@link SchemaNotMigratedError}, which says to
 * migrate.
 */
export function toDatabaseError(err: unknown): Error {
  if (err instanceof RastroError) return err;
  const driver = asDriverError(err);
  const sqlState = typeof driver.code === 'string' && /^[0-9A-Z]{5}$/.test(driver.code) && !SOCKET_ERRORS[driver.code] ? driver.code : undefined;
  const reason = unavailableReason(err);
  if (reason !== undefined) return new DatabaseUnavailableError(reason, sqlState);
  const constraint = typeof driver.constraint === 'string' ? driver.constraint : undefined;
  const message = typeof driver.message === 'string' ? driver.message : 'database error';
  const unmigrated = unmigratedSchema(sqlState, message);
  if (unmigrated !== undefined) return new SchemaNotMigratedError(message, unmigrated);
  return new DatabaseError(message, typeof driver.code === 'string' ? driver.code : undefined, constraint);
}

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  return err instanceof DatabaseError && err.sqlState === '23505' && (constraint === undefined || err.constraint === constraint);
}
