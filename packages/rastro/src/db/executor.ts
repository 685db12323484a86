import { ValidationError } from '../errors.js';
import { IN_TRANSACTION, type Queryable, type QueryOptions, type QueryResult } from './database.js';
import { runOnPg, type PgPool, type PgQueryable } from './postgres.js';

/**
 * A `pg` `Client` or `PoolClient` as rastro uses it: the query-config form of `query`, and the
 * transaction status pg keeps. Any `pg` 8.x client is one.
 */
export interface PgClient extends PgQueryable {
  getTransactionStatus(): string | null;
}


/**
 * What rastro takes where it runs statements in the caller's transaction (`tx`): a `pg` client
 * inside `begin` (a `PoolClient` or `Client`), a `pg` `Pool` (each statement its own
 * transaction), a transaction of rastro's own (`db.transaction`), or a query builder's
 * transaction through its adapter (`fromKysely`, `fromDrizzle`, `fromKnex`).
 */
export type Executor = Queryable | PgClient | PgPool;


export function isPgClient(value: unknown): value is PgClient {
  const client = value as Partial<PgClient> | null;
  return typeof client?.query === 'function' && typeof client.getTransactionStatus === 'function';
}

export function isPgPool(value: unknown): value is PgPool {
  const pool = value as Partial<PgPool> | null;
  return typeof pool?.query === 'function' && typeof pool.connect === 'function' && typeof pool.totalCount === 'number';
}

/**
 * The {@link Queryable} an {@link Executor} is. A `pg` client or pool runs rastro's statements
 * with rastro's type parsers (per query: the pool's own are not changed), so their results are
 * the same as through rastro's pool.
 */
export function toQueryable(executor: Executor): Queryable {
  if (isPgClient(executor)) {
    return {
      query: <Row>(text: string, values?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<Row>> => runOnPg(executor, text, values, options),
      [IN_TRANSACTION]: () => executor.getTransactionStatus() !== 'I',
    };
  }
  if (isPgPool(executor)) {
    return {
      query: <Row>(text: string, values?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<Row>> => runOnPg(executor, text, values, options),
      [IN_TRANSACTION]: () => false,
    };
  }
  if (typeof (executor as Queryable | null)?.query !== 'function') {
    throw new ValidationError('tx', "must be a pg client inside begin, a pg Pool, db.transaction's tx, or a query builder's transaction through fromKysely, fromDrizzle or fromKnex");
  }
  return executor as Queryable;
}

/** Whether a failed statement on `target` would abort a transaction the caller opened. */
export function inCallersTransaction(target: Queryable): boolean {
  return target[IN_TRANSACTION]?.() ?? true;
}
