/** A row set as returned by {@link Queryable.query}. */
export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

/**
 * Marks whether a {@link Queryable}'s statements run inside a transaction its caller opened; a
 * failed statement of rastro's is then contained in a savepoint, so the caller's transaction
 * goes on. Unmarked, a `Queryable` is taken to be a transaction.
 */
export const IN_TRANSACTION: unique symbol = Symbol('rastro.inTransaction');

/**
 * Anything that runs one statement: the database itself or an open transaction. Library calls
 * that write accept a `Queryable`, so a service can put rastro's rows in its own transaction.
 */
export interface Queryable {
  readonly [IN_TRANSACTION]?: () => boolean;
  /**
   * Runs one statement. `prepare: true` asks the server to keep the statement's plan on the
   * connection (a named prepared statement); use it for hot statements whose plan does not
   * depend on the values, nor on the size of a table that can grow fast from empty: a batch's
   * lookup of many keys in the projections or the effect ledger keeps the plan made while the
   * table was small, and then scans it whole every time. Adapters without prepared statements
   * ignore it.
   */
  query<Row = Record<string, unknown>>(text: string, values?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<Row>>;
}

export interface QueryOptions {
  prepare?: boolean;
}

/** An open transaction. `exec` runs a script of several statements without parameters. */
export interface Transaction extends Queryable {
  exec(script: string): Promise<void>;
  /**
   * Calls `fn` once the transaction has committed, never when it rolls back: for what must
   * follow the commit, such as a wake-up notification or a cache of committed state. Optional:
   * a caller's transaction (a `pg` client, a query builder's) has none.
   */
  afterCommit?(fn: () => void): void;
}

/** Runs the callbacks given to {@link Transaction.afterCommit}; one that throws does not stop the others. */
export function runAfterCommit(callbacks: readonly (() => void)[]): void {
  for (const fn of callbacks) {
    try {
      fn();
    } catch {
      // A callback's failure is its own: the transaction committed.
    }
  }
}

/** A dedicated connection. */
export interface Session extends Queryable {
  release(): Promise<void>;
  /** True once its connection is known to be gone (the server ended it, the network dropped it). */
  readonly lost?: boolean;
}

/**
 * The one database interface rastro uses, with a `pg` adapter for `postgres://` URLs and a
 * PGlite adapter for embedded use. Both run the same SQL.
 *
 * @example
 * ```ts
 * const db = await openDatabase({ url: 'memory://' })
 * await db.transaction(async (tx) => { await tx.query('select 1') })
 * ```
 */
export interface Database extends Queryable {
  /** Runs `fn` in a transaction: commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /**
   * Calls `fn` for every NOTIFY on `channel` (a lowercase identifier) until the returned
   * function is called. Notifications are a wake-up hint: one may be lost on a reconnect.
   */
  listen(channel: string, fn: (payload: string) => void): Promise<() => Promise<void>>;
  /**
   * A connection of its own, for session state such as advisory locks; release it when done.
   * PGlite has one connection: its session is the database itself.
   */
  connect(): Promise<Session>;
  close(): Promise<void>;
  /** `postgres` for a server, `pglite` for the embedded database. */
  readonly kind: 'postgres' | 'pglite';
}

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

export function assertChannelName(channel: string): void {
  if (!CHANNEL.test(channel)) throw new TypeError(`channel must be a lowercase identifier, got ${JSON.stringify(channel)}`);
}
