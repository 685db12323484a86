import { randomBytes } from 'node:crypto';
import { drizzle } from 'drizzle-orm/node-postgres';
import { sql as drizzleSql } from 'drizzle-orm';
import knexFactory, { type Knex } from 'knex';
import { Kysely, PostgresDialect, sql as kyselySql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquirerClient } from '../../packages/rastro/src/charges/acquirer.js';
import { startAcquirerFake, type AcquirerFake } from '../../packages/rastro/src/charges/acquirer-fake.js';
import { createCharges } from '../../packages/rastro/src/charges/charges.js';
import { fromDrizzle, fromKnex, fromKysely } from '../../packages/rastro/src/db/adapters.js';
import type { Executor } from '../../packages/rastro/src/db/executor.js';
import { migrate } from '../../packages/rastro/src/db/migrate.js';
import { openDatabase } from '../../packages/rastro/src/db/open-database.js';
import { ConcurrencyError } from '../../packages/rastro/src/errors.js';
import { createOutbox } from '../../packages/rastro/src/outbox/outbox.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { DATABASE_URL } from '../support/databases.js';

// rastro's rows in the application's own transaction, through each way an application holds
// one: a pg PoolClient inside begin, and Kysely, Drizzle and Knex transactions. The
// application's pool parses with settings of its own, as an application's may: int8 as text
// (pg's default), timestamps as text. rastro's results must not depend on them.

const oids = { int8: 20, timestamp: 1114, timestamptz: 1184 };
const appTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === oids.timestamp || oid === oids.timestamptz) return (value: string) => value;
    return pg.types.getTypeParser(oid, format ?? 'text');
  },
};

interface AppTx {
  /** The application's own write, in its transaction. */
  payOrder(id: string): Promise<void>;
  /** The transaction as rastro takes it. */
  tx: Executor;
}

interface Way {
  name: string;
  /** Runs `fn` in one application transaction: commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (app: AppTx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

function ways(pool: pg.Pool, schema: string): Way[] {
  const orders = `"${schema}".orders`;
  const kysely = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool }) });
  const db = drizzle(pool);
  const knex: Knex = knexFactory({ client: 'pg', connection: DATABASE_URL, pool: { min: 0, max: 2 } });
  return [
    {
      name: 'a pg PoolClient',
      async transaction(fn) {
        const client = await pool.connect();
        try {
          await client.query('begin');
          const result = await fn({ tx: client, payOrder: async (id) => void (await client.query(`insert into ${orders} (id, status) values ($1, 'paid')`, [id])) });
          await client.query('commit');
          return result;
        } catch (err) {
          await client.query('rollback');
          throw err;
        } finally {
          client.release();
        }
      },
      close: async () => undefined,
    },
    {
      name: 'Kysely',
      transaction: (fn) => kysely.transaction().execute((trx) =>
        fn({ tx: fromKysely(trx), payOrder: async (id) => void (await kyselySql`insert into ${kyselySql.raw(orders)} (id, status) values (${id}, 'paid')`.execute(trx)) })),
      close: async () => undefined,
    },
    {
      name: 'Drizzle',
      transaction: (fn) => db.transaction((tx) =>
        fn({ tx: fromDrizzle(tx), payOrder: async (id) => void (await tx.execute(drizzleSql`insert into ${drizzleSql.raw(orders)} (id, status) values (${id}, 'paid')`)) })),
      close: async () => undefined,
    },
    {
      name: 'Knex',
      transaction: (fn) => knex.transaction((trx) =>
        fn({ tx: fromKnex(trx), payOrder: async (id) => void (await trx.raw(`insert into ${orders} (id, status) values (?, 'paid')`, [id])) })),
      close: () => knex.destroy(),
    },
  ];
}

describe.skipIf(!DATABASE_URL)("rastro's rows in the application's own transaction, on real PostgreSQL", () => {
  const schema = `t_own_${randomBytes(5).toString('hex')}`;
  let pool: pg.Pool;
  let store: EventStore;
  let all: Way[];
  let acquirer: AcquirerFake;
  const outbox = () => createOutbox(store.db, { schema });
  const count = async (table: string, where: string, value: string) =>
    Number((await pool.query(`select count(*) as n from "${schema}".${table} where ${where} = $1`, [value])).rows[0].n);

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4, types: appTypes });
    const db = await openDatabase({ pool });
    await migrate(db, { schema });
    await pool.query(`create table "${schema}".orders (id text primary key, status text not null)`);
    store = createEventStore(db, { schema });
    all = ways(pool, schema);
    acquirer = await startAcquirerFake();
  });
  afterAll(async () => {
    await acquirer?.close();
    for (const way of all ?? []) await way.close();
    await pool?.query(`drop schema if exists "${schema}" cascade`);
    await pool?.end();
  });

  const each = () => ['a pg PoolClient', 'Kysely', 'Drizzle', 'Knex'];

  it.each(each())('commits the order, its event and its outbox message together through %s, with numbers as numbers', async (name) => {
    const way = all.find((w) => w.name === name)!;
    const id = `order-${randomBytes(4).toString('hex')}`;
    const appended = await way.transaction(async ({ tx, payOrder }) => {
      await payOrder(id);
      const result = await store.append(id, [{ type: 'order.paid', data: { amountCents: 12_500 } }], { expectedVersion: 'no-stream', tx });
      await outbox().write(tx, { aggregateType: 'order', aggregateId: id, type: 'OrderPaid', payload: { amountCents: 12_500 } });
      // Read back inside the transaction, through the application's parsers.
      const [event] = await store.readStream(id, { tx });
      expect(typeof event!.position).toBe('number');
      expect(event!.occurredAt).toBeInstanceOf(Date);
      expect(await store.streamVersion(id, { tx })).toBe(1);
      return result;
    });
    expect(appended.streamVersion).toBe(1);
    expect(appended.streamVersion + 1).toBe(2);
    expect(appended.positions.every((p) => typeof p === 'number')).toBe(true);
    expect(await count('orders', 'id', id)).toBe(1);
    expect((await store.readStream(id)).map((e) => e.type)).toEqual(['order.paid']);
    expect(await count('outbox', 'aggregate_id', id)).toBe(1);
    // The version it returned is the one to expect next.
    await store.append(id, [{ type: 'order.shipped', data: {} }], { expectedVersion: appended.streamVersion });
  });

  it.each(each())('leaves no order, event or outbox message when the transaction through %s rolls back', async (name) => {
    const way = all.find((w) => w.name === name)!;
    const id = `order-${randomBytes(4).toString('hex')}`;
    await expect(way.transaction(async ({ tx, payOrder }) => {
      await payOrder(id);
      await store.append(id, [{ type: 'order.paid', data: { amountCents: 100 } }], { tx });
      await outbox().write(tx, { aggregateType: 'order', aggregateId: id, type: 'OrderPaid', payload: {} });
      throw new Error('the application changed its mind');
    })).rejects.toThrow('the application changed its mind');
    expect(await count('orders', 'id', id)).toBe(0);
    expect(await store.readStream(id)).toEqual([]);
    expect(await count('outbox', 'aggregate_id', id)).toBe(0);
    expect(await count('streams', 'stream_id', id)).toBe(0);
  });

  it.each(each())('keeps the transaction through %s usable after a version conflict inside it', async (name) => {
    const way = all.find((w) => w.name === name)!;
    const id = `order-${randomBytes(4).toString('hex')}`;
    await store.append(id, [{ type: 'order.placed', data: {} }]);
    await way.transaction(async ({ tx, payOrder }) => {
      const conflict = await store.append(id, [{ type: 'order.paid', data: {} }], { expectedVersion: 7, tx }).catch((err: unknown) => err);
      expect(conflict).toBeInstanceOf(ConcurrencyError);
      expect((conflict as ConcurrencyError).actual).toBe(1);
      await payOrder(id);
      await store.append(id, [{ type: 'order.paid', data: {} }], { expectedVersion: 1, tx });
    });
    expect(await count('orders', 'id', id)).toBe(1);
    expect((await store.readStream(id)).map((e) => e.type)).toEqual(['order.placed', 'order.paid']);
  });

  it.each(each())('writes a charge with its order through %s, and captures it only once that committed', async (name) => {
    const way = all.find((w) => w.name === name)!;
    const charges = createCharges(store, { acquirer: acquirerClient(acquirer.url) });
    const rolledBack = crypto.randomUUID();
    let abandoned = '';
    await expect(way.transaction(async ({ tx, payOrder }) => {
      await payOrder(`order-${rolledBack}`);
      abandoned = (await charges.start({ amountCents: 12_500, customerId: 'c-1' }, rolledBack, { tx })).charge.id;
      throw new Error('the application changed its mind');
    })).rejects.toThrow('the application changed its mind');
    // No charge, no ledger entry, no outbox message: nothing for reconciliation to find either.
    expect(await count('charges', 'idempotency_key', rolledBack)).toBe(0);
    expect(await count('effects', 'key', `charge:${abandoned}`)).toBe(0);
    expect(await count('outbox', 'aggregate_id', abandoned)).toBe(0);

    const key = crypto.randomUUID();
    const started = await way.transaction(async ({ tx, payOrder }) => {
      await payOrder(`order-${key}`);
      return charges.start({ amountCents: 12_500, customerId: 'c-1' }, key, { tx });
    });
    expect(started.charge).toMatchObject({ status: 'PENDING', amountCents: 12_500 });
    expect(acquirer.requestsFor.get(key)?.captures ?? 0).toBe(0);
    expect(await count('effects', 'key', `charge:${started.charge.id}`)).toBe(1);
    expect(await charges.capture(started.charge.id)).toMatchObject({ status: 'CAPTURED' });
    expect(await charges.capture(started.charge.id)).toMatchObject({ status: 'CAPTURED' });
    expect(acquirer.requestsFor.get(key)?.captures).toBe(1);
  });

  it("shares the application's pool, parses with rastro's own parsers, and leaves the pool open when closed", async () => {
    const before = pool.totalCount;
    const db = await openDatabase({ pool });
    const shared = createEventStore(db, { schema });
    const id = `order-${randomBytes(4).toString('hex')}`;
    const { streamVersion } = await shared.append(id, [{ type: 'order.paid', data: {} }]);
    expect(streamVersion).toBe(1);
    const [event] = await shared.readAll({ types: ['order.paid'], limit: 10_000 }).then((events) => events.filter((e) => e.streamId === id));
    expect(typeof event!.txOrder).toBe('number');
    expect(event!.recordedAt).toBeInstanceOf(Date);
    // What the application's own queries get is left as it set it.
    const { rows } = await pool.query(`select version from "${schema}".streams where stream_id = $1`, [id]);
    expect(rows[0].version).toBe('1');
    await db.close();
    expect((await pool.query('select 1 as one')).rows[0].one).toBe(1);
    expect(pool.totalCount).toBeLessThanOrEqual(Math.max(before, 4));
  });

  it("refuses a Kysely, Drizzle or Knex object that is not an open transaction, naming tx", async () => {
    const kysely = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool }) });
    expect(() => fromKysely(kysely as never)).toThrow(/tx: fromKysely takes an open Kysely transaction/);
    expect(() => fromDrizzle(drizzle(pool) as never)).toThrow(/tx: fromDrizzle takes an open transaction/);
    const knex = knexFactory({ client: 'pg', connection: DATABASE_URL, pool: { min: 0, max: 1 } });
    try {
      expect(() => fromKnex(knex as never)).toThrow(/tx: fromKnex takes an open Knex transaction/);
    } finally {
      await knex.destroy();
    }
  });
});
