// The intake workload: order histories of 10,000, 100,000 and 1,000,000 raw snapshots (ten per
// order), inserted by SQL straight into a bench schema's events table with the normalized rows
// and the live checkpoint they would have, then 1,000 new snapshots per round through the intake.
import { createEventStore, createOrders, migrate, openDatabase } from 'rastro';
import { DATABASE_URL } from '../shared/database.js';

const env = (name, fallback) => Number(process.env[name] ?? fallback);

export const INTAKE = Object.freeze({
  sizes: (process.env.BENCH_INTAKE_SIZES ?? '10000,100000,1000000').split(',').map(Number),
  perOrder: 10,
  newSnapshots: 1_000,
  /** Rounds of 1,000 new snapshots per size; the median is reported. */
  rounds: env('BENCH_INTAKE_ROUNDS', 5),
  connections: 16,
  webhookWarmupMs: env('BENCH_HTTP_WARMUP_MS', 1000),
  webhookDurationMs: env('BENCH_HTTP_DURATION_MS', 8000),
});

export const sizeKey = (size) => `round${size >= 1_000_000 ? `${size / 1_000_000}m` : `${size / 1000}k`}`;

const LAST_UPDATE = (ts) => `to_char(${ts} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** Setup, not measured: `size` snapshots of `size / 10` orders, as the intake would have stored them, normalized and checkpointed. */
async function fillHistory(db, schema, size) {
  const orders = size / INTAKE.perOrder;
  await db.transaction(async (tx) => {
    const ts = `('2026-01-01T00:00:00Z'::timestamptz + v * interval '1 hour' + o * interval '10 milliseconds')`;
    await tx.query(
      `insert into ${schema}.streams (stream_id, version, tx_order)
       select 'order:pied:b' || o, ${INTAKE.perOrder}, pg_current_xact_id()::text::bigint from generate_series(1, $1) o`,
      [orders],
    );
    await tx.query(
      `insert into ${schema}.events (tx_order, stream_id, stream_version, id, type, data, occurred_at)
       select pg_current_xact_id()::text::bigint, 'order:pied:b' || o, v, gen_random_uuid(), 'order.snapshot',
              jsonb_build_object('source', 'pied', 'channel', case when v % 2 = 0 then 'rest' else 'webhook' end, 'orderId', 'b' || o,
                'status', case when v = ${INTAKE.perOrder} then 'received' else (array['requested', 'partial', 'cancelled'])[1 + v % 3] end,
                'lastUpdate', ${LAST_UPDATE(ts)}, 'lastUpdateText', ${LAST_UPDATE(ts)},
                'payload', jsonb_build_object('customer', jsonb_build_object('name', 'C' || o))),
              ${ts} + interval '1 second'
         from generate_series(1, ${INTAKE.perOrder}) v, generate_series(1, $1) o
        order by v, o`,
      [orders],
    );
    const last = `('2026-01-01T00:00:00Z'::timestamptz + ${INTAKE.perOrder} * interval '1 hour' + o * interval '10 milliseconds')`;
    await tx.query(
      `insert into ${schema}.projections (projection, key, doc, observed_at)
       select 'order', 'pied:b' || o,
              jsonb_build_object('source', 'pied', 'orderId', 'b' || o, 'status', 'received', 'lifecycle', 'captured',
                'lastUpdate', ${LAST_UPDATE(last)}, 'paidAt', ${LAST_UPDATE(last)}, 'partialSince', null, 'cancelledAfterImportAt', null,
                'importedAt', null, 'importFailure', null, 'invoice', null, 'customer', jsonb_build_object('name', 'C' || o),
                'payload', jsonb_build_object('customer', jsonb_build_object('name', 'C' || o)), 'snapshotEventId', null),
              ${last}
         from generate_series(1, $1) o`,
      [orders],
    );
    await tx.query(
      `insert into ${schema}.processor_checkpoints (run_id, partition, tx_order, position)
       select 'live:orders', p, e.tx_order, e.position
         from generate_series(0, 7) p, (select tx_order, position from ${schema}.events order by tx_order desc, position desc limit 1) e`,
    );
  });
  for (const table of ['events', 'streams', 'projections']) await db.query(`vacuum analyze ${schema}.${table}`);
}

/** A fresh schema holding a history of `size` snapshots. */
export async function openHistory(prefix, size) {
  const db = await openDatabase({ url: DATABASE_URL, poolSize: 10 });
  const schema = `${prefix}_${size}`;
  await db.query(`drop schema if exists ${schema} cascade`);
  await migrate(db, { schema });
  await fillHistory(db, schema, size);
  const store = createEventStore(db, { schema });
  const alerts = [];
  const orders = createOrders(store, { alert: async (alert) => alerts.push(alert) });
  return {
    db,
    schema,
    store,
    orders,
    alerts,
    /** Setup, not measured: 1,000 new snapshots of distinct existing orders, later than their history, 16 at a time. */
    async addSnapshots(round) {
      const count = size / INTAKE.perOrder;
      const jobs = Array.from({ length: INTAKE.newSnapshots }, (_, i) => {
        const order = 1 + ((i * 7919 + round * 31) % count);
        const lastUpdate = new Date(Date.parse('2026-02-01T00:00:00Z') + round * 3_600_000 + i).toISOString();
        return { orderId: `b${order}`, status: i % 2 ? 'received' : 'partial', lastUpdate, invoice: { number: `NF-${round}-${i}` } };
      });
      let next = 0;
      await Promise.all(Array.from({ length: 16 }, async () => {
        while (next < jobs.length) await orders.intake.record('pied', 'webhook', jobs[next++]);
      }));
    },
    async close() {
      await db.query(`drop schema ${schema} cascade`);
      await db.close();
    },
  };
}
