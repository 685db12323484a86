// The processing workload: 100,000 `order.paid` events, one per order, as the story has them.
import { createEventStore, defineProcessor, migrate, openDatabase } from 'rastro';
import { DATABASE_URL } from '../shared/database.js';
import { poolErrors } from '../shared/pools.js';

export const PROCESSING = { events: 100_000, streams: 100_000, pageSize: 1_000, batchSize: 1_000 };

/** The replayed processor: a guarded commission row and one `notify-seller` effect per paid order. */
export const commissions = defineProcessor({
  name: 'bench-commissions',
  handlers: {
    'order.paid': async (event, ctx) => {
      const { orderId, amountCents, percent } = event.data;
      const commissionCents = Math.round((amountCents * percent) / 100);
      await ctx.upsert('commission', orderId, { orderId, commissionCents }, { version: event.streamVersion });
      await ctx.effect('notify-seller', async (key) => ({ delivered: key }));
    },
  },
});
/** The beside-live contender: a day of 1,000,000 paid orders, the live traffic one event every 5 ms, 10 s measured idle. */
export const BESIDE_LIVE = { events: 1_000_000, intervalMs: 5, idleMs: 10_000 };

export const applyPolicy = { 'notify-seller': { mode: 'apply', onFailure: 'keep' } };

/** A fresh schema holding `events` of the workload's events (one per order stream), inserted by SQL. */
export async function openFilledStore(schema, events = PROCESSING.events) {
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
      [events],
    );
    await tx.query(
      `insert into ${schema}.events (tx_order, stream_id, stream_version, id, type, data, occurred_at)
       select pg_current_xact_id()::text::bigint, 'order-o' || g, 1, gen_random_uuid(), 'order.paid',
              jsonb_build_object('orderId', 'o' || g, 'amountCents', 10000 + g % 1000, 'percent', 5 + g % 7),
              '2026-10-14T12:00:00Z'
         from generate_series(1, $1) g`,
      [events],
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
