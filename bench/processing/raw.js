// The baseline: a raw ordered scan of the same 100,000 events with pg, keyset pages of 1,000,
// int8 and jsonb parsed as rastro does, and the commission computed per row.
import pg from 'pg';
import { runContender } from '../shared/contender.js';
import { DATABASE_URL } from '../shared/database.js';
import { guardPool } from '../shared/pools.js';
import { PROCESSING, openFilledStore } from './workload.js';

const types = {
  getTypeParser: (oid, format) => (oid === 20 ? Number : pg.types.getTypeParser(oid, format)),
};

await runContender(async (run) => {
  const schema = `bench_proc_raw_${run}`;
  const filled = await openFilledStore(schema);
  const guarded = guardPool(new pg.Pool({ connectionString: DATABASE_URL, max: 2, types }), `raw scan pool on ${schema}`);
  const { pool } = guarded;
  try {
    const started = performance.now();
    let after = [0, 0];
    let seen = 0;
    let total = 0;
    for (;;) {
      const { rows } = await pool.query(
        `select position, tx_order, stream_id, stream_version, id, type, data, metadata, occurred_at
           from ${schema}.events where (tx_order, position) > ($1, $2) order by tx_order, position limit $3`,
        [after[0], after[1], PROCESSING.pageSize],
      );
      if (rows.length === 0) break;
      for (const row of rows) total += Math.round((row.data.amountCents * row.data.percent) / 100);
      seen += rows.length;
      const last = rows[rows.length - 1];
      after = [last.tx_order, last.position];
    }
    const seconds = (performance.now() - started) / 1000;
    if (seen !== PROCESSING.events || total === 0) throw new Error(`scanned ${seen} events`);
    return { scan: seen / seconds };
  } finally {
    try {
      await guarded.end();
    } finally {
      await filled.close();
    }
  }
});
