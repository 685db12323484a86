import { ValidationError } from '../errors.js';
import { IN_TRANSACTION, type Queryable, type QueryResult } from './database.js';
import { toDatabaseError } from './database-error.js';
import { isPgClient, toQueryable, type PgClient } from './executor.js';

/**
 * Adapters that run rastro's statements inside a query builder's open transaction, so the
 * events, outbox messages and ledger entries rastro writes commit or roll back with the
 * application's own rows. None of them imports its query builder: each is typed by the little
 * of it that it uses.
 */

/** What {@link fromKysely} uses of a Kysely `Transaction`. */
export interface KyselyTransaction {
  readonly isTransaction: boolean;
  withoutPlugins(): { executeQuery(query: never): Promise<{ rows: unknown[]; numAffectedRows?: bigint }> };
}

/**
 * A Kysely transaction as a `tx` for rastro. Its plugins (CamelCasePlugin…) are left out of
 * rastro's statements, whose rows rastro reads itself. Kysely parses values with the
 * application's settings (int8 may come back as a string): rastro reads every value of its own
 * through its own conversions, so its results are the same as through its own pool.
 *
 * @example
 * ```ts
 * await db.transaction().execute(async (trx) => {
 *   await trx.updateTable('orders').set({ status: 'paid' }).where('id', '=', id).execute()
 *   await store.append(`order-${id}`, [{ type: 'order.paid', data }], { tx: fromKysely(trx) })
 * })
 * ```
 */
export function fromKysely(trx: KyselyTransaction): Queryable {
  if (trx?.isTransaction !== true || typeof trx.withoutPlugins !== 'function') {
    throw new ValidationError('tx', 'fromKysely takes an open Kysely transaction (db.transaction().execute(async (trx) => …)), not the Kysely instance');
  }
  const executor = trx.withoutPlugins();
  let queries = 0;
  return {
    async query<Row>(text: string, values: readonly unknown[] = []): Promise<QueryResult<Row>> {
      // A compiled raw query, as Kysely's `CompiledQuery.raw` makes one.
      const compiled = { sql: text, parameters: values, query: { kind: 'RawNode', sqlFragments: [text], parameters: [] }, queryId: { queryId: `rastro-${++queries}` } };
      try {
        const result = await executor.executeQuery(compiled as never);
        return { rows: result.rows as Row[], rowCount: result.numAffectedRows === undefined ? result.rows.length : Number(result.numAffectedRows) };
      } catch (err) {
        throw toDatabaseError(err);
      }
    },
    [IN_TRANSACTION]: () => true,
  };
}

/** What {@link fromDrizzle} uses of a Drizzle transaction on `drizzle-orm/node-postgres`. */
export interface DrizzleTransaction {
  readonly _: { readonly session: unknown };
}

/**
 * A Drizzle transaction (`drizzle-orm/node-postgres`) as a `tx` for rastro: its statements run
 * on the transaction's own `pg` connection, with rastro's type parsers.
 *
 * @example
 * ```ts
 * await db.transaction(async (tx) => {
 *   await tx.update(orders).set({ status: 'paid' }).where(eq(orders.id, id))
 *   await store.append(`order-${id}`, [{ type: 'order.paid', data }], { tx: fromDrizzle(tx) })
 * })
 * ```
 */
export function fromDrizzle(tx: DrizzleTransaction): Queryable {
  const client = (tx?._?.session as { client?: unknown } | undefined)?.client;
  if (!isPgClient(client)) {
    throw new ValidationError('tx', 'fromDrizzle takes an open transaction of drizzle-orm/node-postgres (db.transaction(async (tx) => …))');
  }
  return toQueryable(client);
}

/** What {@link fromKnex} uses of a Knex transaction on the `pg` client. */
export interface KnexTransaction {
  readonly isTransaction?: boolean;
  readonly client: { acquireConnection(): Promise<unknown> };
}

/**
 * A Knex transaction (client `pg`) as a `tx` for rastro: its statements run on the
 * transaction's own `pg` connection, with rastro's type parsers, and without the application's
 * `postProcessResponse` or identifier wrapping.
 *
 * @example
 * ```ts
 * await knex.transaction(async (trx) => {
 *   await trx('orders').update({ status: 'paid' }).where({ id })
 *   await store.append(`order-${id}`, [{ type: 'order.paid', data }], { tx: fromKnex(trx) })
 * })
 * ```
 */
export function fromKnex(trx: KnexTransaction): Queryable {
  if (trx?.isTransaction !== true || typeof trx.client?.acquireConnection !== 'function') {
    throw new ValidationError('tx', 'fromKnex takes an open Knex transaction (knex.transaction(async (trx) => …)), not the Knex instance');
  }
  // A transaction's client hands out the connection the transaction holds, and never releases it.
  let connection: Promise<Queryable> | undefined;
  const open = () =>
    (connection ??= trx.client.acquireConnection().then((client) => {
      if (!isPgClient(client)) throw new ValidationError('tx', 'fromKnex takes a transaction of a Knex instance with client pg');
      return toQueryable(client as PgClient);
    }));
  return {
    query: async (text, values, options) => (await open()).query(text, values, options),
    [IN_TRANSACTION]: () => true,
  };
}
