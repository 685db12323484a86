// The baseline: the seed's full-history round on the same data (seed 004, before its decision
// B): every raw snapshot re-read in capture order, folded per order under the recency rule, and
// every order upserted again, 1,000 rows per statement.
import { applyOrderEvent, emptyOrderOf } from './seed-fold.js';
import { runContender } from '../shared/contender.js';
import { INTAKE, openHistory, sizeKey } from './workload.js';

const PAGE = 5_000;

async function fullHistoryRound({ db, schema }) {
  const states = new Map();
  let after = [0, 0];
  for (;;) {
    const { rows } = await db.query(
      `select tx_order, position, id, stream_id, stream_version, type, data, occurred_at from ${schema}.events
        where (tx_order, position) > ($1, $2) and type = 'order.snapshot' order by tx_order, position limit ${PAGE}`,
      after,
    );
    for (const row of rows) {
      const event = { id: row.id, streamId: row.stream_id, streamVersion: Number(row.stream_version), type: row.type, data: row.data, occurredAt: row.occurred_at };
      states.set(row.stream_id, applyOrderEvent(states.get(row.stream_id) ?? emptyOrderOf(row.data), event));
    }
    if (rows.length < PAGE) break;
    after = [rows.at(-1).tx_order, rows.at(-1).position];
  }
  const all = [...states.values()];
  for (let i = 0; i < all.length; i += 1000) {
    const chunk = all.slice(i, i + 1000);
    await db.query(
      `insert into ${schema}.projections (projection, key, doc, observed_at)
       select 'order', k, d, o from unnest($1::text[], $2::jsonb[], $3::timestamptz[]) as u(k, d, o)
       on conflict (projection, key) do update set doc = excluded.doc, observed_at = coalesce(excluded.observed_at, ${schema}.projections.observed_at), updated_at = now()
        where ${schema}.projections.observed_at is null or excluded.observed_at is null
           or date_trunc('second', excluded.observed_at) >= date_trunc('second', ${schema}.projections.observed_at)`,
      [chunk.map((s) => `${s.source}:${s.orderId}`), chunk.map((s) => JSON.stringify(s)), chunk.map((s) => s.lastUpdate)],
    );
  }
  return states.size;
}

await runContender(async () => {
  const results = {};
  for (const size of INTAKE.sizes) {
    const history = await openHistory('bench_intake_seed', size);
    try {
      await history.addSnapshots(1);
      const started = performance.now();
      const orders = await fullHistoryRound(history);
      results[sizeKey(size)] = performance.now() - started;
      if (orders !== size / INTAKE.perOrder) throw new Error(`the full round normalized ${orders} orders`);
    } finally {
      await history.close();
    }
  }
  return results;
});
