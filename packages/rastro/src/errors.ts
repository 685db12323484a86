/**
 * Every failure rastro reports is a {@link RastroError} with a stable string `code`.
 * Codes are listed in docs/errors.md; HTTP statuses are mapped in the HTTP layer only.
 *
 * @example
 * ```ts
 * try { await store.append('order-1', events, { expectedVersion: 3 }) }
 * catch (err) { if (err instanceof ConcurrencyError) console.log(err.actual) }
 * ```
 */
export class RastroError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Input that breaks a documented rule. `field` names the offending input. Nothing was written. */
export class ValidationError extends RastroError {
  readonly field: string;

  constructor(field: string, message: string) {
    super('RASTRO_VALIDATION', `${field}: ${message}`);
    this.field = field;
  }
}

/** Options or environment that cannot be used. */
export class ConfigError extends RastroError {
  constructor(message: string) {
    super('RASTRO_CONFIG', message);
  }
}

export type ExpectedVersion = number | 'no-stream' | 'exists' | 'any';

/** The stream was not at the version the caller expected. Nothing was written. */
export class ConcurrencyError extends RastroError {
  readonly streamId: string;
  readonly expected: ExpectedVersion;
  /** The stream's version when the append was refused; 0 when the stream does not exist. */
  readonly actual: number;

  constructor(streamId: string, expected: ExpectedVersion, actual: number) {
    super(
      'RASTRO_CONCURRENCY',
      actual === expected
        ? `stream ${JSON.stringify(streamId)} is at version ${actual} with another head than the one expected: its history is not the one read; reload the stream and retry`
        : `stream ${JSON.stringify(streamId)} is at version ${actual}, expected ${String(expected)}; reload the stream and retry`,
    );
    this.streamId = streamId;
    this.expected = expected;
    this.actual = actual;
  }
}

/** An event id already in the log was appended again with other content or to another stream. */
export class EventIdConflictError extends RastroError {
  readonly eventId: string;

  constructor(eventId: string, reason: string) {
    super('RASTRO_EVENT_ID_CONFLICT', `event ${eventId} is already in the log ${reason}; a retry must resend the same events`);
    this.eventId = eventId;
  }
}

/** A migration file that was applied has changed since, or the database has migrations this code does not know. */
export class MigrationError extends RastroError {
  constructor(message: string) {
    super('RASTRO_MIGRATION', message);
  }
}

/**
 * The log holds transaction orders ahead of this cluster's transaction ids: the database was
 * restored into a new cluster. Readers would skip new events until `rastro store rebase` runs.
 */
export class TransactionIdsRewoundError extends RastroError {
  constructor(schema: string) {
    super(
      'RASTRO_TX_IDS_REWOUND',
      `the events in schema ${schema} carry transaction ids from another PostgreSQL cluster (was it restored from a dump?); ` +
        'stop every writer and run `rastro store rebase` before appending or reading',
    );
  }
}

/**
 * The database refused or failed a statement. It keeps the server's message, SQLSTATE and
 * constraint name, but never the statement, its bound values or the server's detail line.
 */
export class DatabaseError extends RastroError {
  /** The PostgreSQL SQLSTATE, e.g. `23505`. */
  readonly sqlState: string | undefined;
  readonly constraint: string | undefined;

  constructor(message: string, sqlState: string | undefined, constraint: string | undefined, code = 'RASTRO_DATABASE') {
    super(code, message);
    this.sqlState = sqlState;
    this.constraint = constraint;
  }
}

/**
 * A statement used one of rastro's tables in a schema that does not have it: the schema was
 * never migrated (or not fully). Keeps SQLSTATE `42P01` (undefined_table); `schema` names it.
 */
export class SchemaNotMigratedError extends DatabaseError {
  readonly schema: string;

  constructor(message: string, schema: string) {
    super(`${message}: schema ${schema} does not have rastro's tables; migrate it first (\`rastro migrate\`, or \`migrate(db, { schema: '${schema}' })\` in the library)`, '42P01', undefined, 'RASTRO_NOT_MIGRATED');
    this.schema = schema;
  }
}

/**
 * The database cannot be reached: the connection was refused, reset or timed out, the server is
 * shutting down or starting, or it has no connection slot left. Nothing is wrong with the
 * request: the same request may succeed once the database is back.
 */
export class DatabaseUnavailableError extends DatabaseError {
  constructor(reason: string, sqlState: string | undefined) {
    super(`the database is not reachable (${reason}); retry later`, sqlState, undefined, 'RASTRO_DATABASE_UNAVAILABLE');
  }
}

/**
 * The embedded database's folder is open in another process (a running `rastro serve` or
 * `npm start`, say). PGlite runs the database inside the process that opens it, so a second
 * process writing the same folder would corrupt it: it is refused instead.
 */
export class DatabaseInUseError extends RastroError {
  readonly folder: string;
  readonly pid: number;

  constructor(folder: string, pid: number) {
    super('RASTRO_DATABASE_IN_USE', `the embedded database in ${folder} is open in process ${pid} (a running rastro serve or npm start?): stop that process first, or use another folder (RASTRO_DATA_DIR)`);
    this.folder = folder;
    this.pid = pid;
  }
}

/**
 * `rastro demo <story>` was asked to tell a story in a database where it was told already: it
 * would meet its own first telling (the same orders, keys and runs) and tell something else.
 */
export class DemoAlreadyToldError extends RastroError {
  constructor(story: string, dir: string) {
    super('RASTRO_DEMO_ALREADY_TOLD', `the ${story} story was told in ${dir} already, and npm start shows it there; to tell it again, use another folder: rastro demo ${story} --data-dir <folder>`);
  }
}

/** The operation needs something that was closed or stopped. */
export class ClosedError extends RastroError {
  constructor(what: string) {
    super('RASTRO_CLOSED', `${what} is closed`);
  }
}

/**
 * A replay joined a run id that other runners are replaying with another policy. Runners of one
 * run share its partitions, so they must decide every effect alike.
 */
export class RunInProgressError extends RastroError {
  readonly runId: string;

  constructor(runId: string) {
    super('RASTRO_RUN_IN_PROGRESS', `run ${JSON.stringify(runId)} is being replayed by another process with another policy; join it with the same policy, wait for it to end (rastro replay continues a stopped run from its checkpoint), or choose another run id`);
    this.runId = runId;
  }
}

/**
 * A parked event named by its id alone, while it is parked in several runs (the live run, a
 * replay that fixes it…): which entry to act on must be said. `runs` names them.
 */
export class AmbiguousParkedEventError extends RastroError {
  readonly runs: string[];

  constructor(eventId: string, runs: string[]) {
    super('RASTRO_PARKED_EVENT_AMBIGUOUS', `event ${JSON.stringify(eventId)} is parked in ${runs.length} runs (${runs.join(', ')}); name the run whose entry to act on`);
    this.runs = runs;
  }
}

/** No account with that id. */
export class AccountNotFoundError extends RastroError {
  constructor(accountId: string) {
    super('RASTRO_ACCOUNT_NOT_FOUND', `account ${JSON.stringify(accountId)} does not exist`);
  }
}

/** No order with that id: no snapshot of it was ever received. */
export class OrderNotFoundError extends RastroError {
  constructor(orderKey: string) {
    super('RASTRO_ORDER_NOT_FOUND', `order ${JSON.stringify(orderKey)} does not exist: no snapshot of it was received`);
  }
}

/** A provider's API answered with something rastro cannot use (an error status, a malformed page). */
export class ProviderError extends RastroError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('RASTRO_PROVIDER', message, options);
  }
}

/** A withdrawal above the balance replayed from the account's events. Nothing was written. */
export class InsufficientFundsError extends RastroError {
  readonly balance: number;
  readonly amount: number;

  constructor(balance: number, amount: number) {
    super('RASTRO_INSUFFICIENT_FUNDS', `insufficient funds: the balance is ${balance}, the withdrawal ${amount}`);
    this.balance = balance;
    this.amount = amount;
  }
}

/** The caller's If-Match names a version the resource is no longer at. Nothing was written. */
export class PreconditionFailedError extends RastroError {
  readonly actualVersion: number;

  constructor(expected: string, actualVersion: number) {
    super('RASTRO_PRECONDITION_FAILED', `If-Match ${expected} does not match the current version ${actualVersion}; read it again`);
    this.actualVersion = actualVersion;
  }
}

/** Another request with the same Idempotency-Key is still being processed. */
export class IdempotencyKeyInFlightError extends RastroError {
  constructor() {
    super('RASTRO_IDEMPOTENCY_IN_FLIGHT', 'a request with this Idempotency-Key is still being processed; retry after it completes');
  }
}

/** An Idempotency-Key was reused for a different request (method, path or body). */
export class IdempotencyKeyReusedError extends RastroError {
  constructor() {
    super('RASTRO_IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used for a different request; use a new key for a new request');
  }
}

/** The request has no valid `Authorization: Bearer <key>`. */
export class UnauthorizedError extends RastroError {
  constructor() {
    super('RASTRO_UNAUTHORIZED', 'missing or wrong API key: send Authorization: Bearer <key>');
  }
}

/** A request that must carry an Idempotency-Key (a charge) came without one. */
export class IdempotencyKeyRequiredError extends RastroError {
  constructor() {
    super('RASTRO_IDEMPOTENCY_KEY_REQUIRED', 'Idempotency-Key: the header is required to create a charge, so a retry can never charge twice; send a new unique key per charge');
  }
}

export class ChargeNotFoundError extends RastroError {
  constructor(id: string) {
    super('RASTRO_CHARGE_NOT_FOUND', `charge ${JSON.stringify(id)} does not exist`);
  }
}

/** An audit found something to act on: the command exits 1 after printing the findings. */
export class AuditFindingsError extends RastroError {
  constructor(findings: number) {
    super('RASTRO_AUDIT_FINDINGS', `the audit found ${findings} thing${findings === 1 ? '' : 's'} to act on; each finding says what to do`);
  }
}

/** `rastro verify` found the trail damaged (exit code 1); the findings name each event, block or digest and what to do. */
export class TrailFindingsError extends RastroError {
  constructor(count: number) {
    super('RASTRO_TRAIL_FINDINGS', `rastro verify found ${count} thing${count === 1 ? '' : 's'} wrong with the trail; see each finding`);
  }
}

/** A proof did not check out against its digest; `problems` says how. */
export class ProofInvalidError extends RastroError {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super('RASTRO_PROOF_INVALID', `the proof does not hold: ${problems.join('; ')}`);
    this.problems = problems;
  }
}

/** The trail has no block yet, or not one sealing the event asked about: the sealer has not reached it. */
export class NotSealedError extends RastroError {
  constructor(what: string) {
    super('RASTRO_NOT_SEALED', `${what} is not sealed in a block yet: run rastro seal (serve seals by default), then ask again`);
  }
}
