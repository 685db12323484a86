// The processing workload: 100,000 `order.paid` events, one per order, as the story has them.
import { createEventStore, migrate, openDatabase } from '../../dist/index.js';
import { DATABASE_URL } from '../shared/database.js';
import { poolErrors } from '../shared/pools.js';

export const PROCESSING = { events: 100_000, streams: 100_000, pageSize: 1_000, batchSize: 1_000 };

/** A fresh schema holding the workload's events, filled through the store's batch append. */
export async function openFilledStore(schema) {
  const errors = poolErrors(`rastro pool for ${schema}`);
  const db = await openDatabase({ url: DATABASE_URL, poolSize: 10, onError: errors.onError });
  await db.query(`drop schema if exists ${schema} cascade`);
  await migrate(db, { schema });
  const store = createEventStore(db, { schema });
  // Setup, not measured: the rows an append would write, inserted by SQL in one transaction.
  await db.transaction(async (tx) => {
    await tx.query(
      `insert into ${schema}.streams (stream_id, version, tx_order)
       select 'order-o' || g, 1, pg_current_xact_id()::text::bigint from generate_series(1, $1) g`,
      [PROCESSING.events],
    );
    await tx.query(
      `insert into ${schema}.events (tx_order, stream_id, stream_version, id, type, data, occurred_at)
       select pg_current_xact_id()::text::bigint, 'order-o' || g, 1, gen_random_uuid(), 'order.paid',
              jsonb_build_object('orderId', 'o' || g, 'amountCents', 10000 + g % 1000, 'percent', 5 + g % 7),
              '2026-10-14T12:00:00Z'
         from generate_series(1, $1) g`,
      [PROCESSING.events],
    );
  });
  await db.query(`vacuum analyze ${schema}.events`);
  return {
    db,
    store,
    /** Vacuums and analyzes tables of the schema. */
    async settle(tables) {
      for (const table of tables) await db.query(`vacuum analyze ${schema}.${table}`);
    },
    async close() {
      try {
        await db.query(`drop schema ${schema} cascade`);
      } finally {
        errors.closing();
        await db.close();
      }
    },
  };
}
