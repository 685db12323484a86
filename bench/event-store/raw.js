// Raw baseline: plain pg against a table shaped like rastro's events table (same columns, keys and
// index), without rastro's streams table, triggers or checks.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { runContender } from '../shared/contender.js';
import { DATABASE_URL } from '../shared/database.js';
import { guardPool } from '../shared/pools.js';
import { eventsTableSql, rawTypes } from '../shared/raw-events.js';
import { runEventStoreWorkload } from './workload.js';

/** One multi-row insert: $1 is the stream, then six parameters per event. */
function insertSql(s, count) {
  const rows = Array.from({ length: count }, (_, i) => {
    const p = 2 + i * 6;
    return `(pg_current_xact_id()::text::bigint, $1, $${p}, $${p + 1}, $${p + 2}, $${p + 3}, $${p + 4}, $${p + 5})`;
  });
  return `insert into ${s}.events (tx_order, stream_id, stream_version, id, type, data, metadata, occurred_at) values ${rows.join(', ')}`;
}

async function openRaw(run) {
  const schema = `bench_raw_${run}`;
  const guarded = guardPool(new pg.Pool({ connectionString: DATABASE_URL, max: 10, types: rawTypes }), `raw pool on ${schema}`);
  const { pool } = guarded;
  await pool.query(`drop schema if exists ${schema} cascade; create schema ${schema}; ${eventsTableSql(schema)}`);
  const inserts = new Map();
  const insertText = (count) => inserts.get(count) ?? inserts.set(count, insertSql(schema, count)).get(count);
  const readSql = `select position, tx_order, stream_id, stream_version, id, type, data, metadata, occurred_at, recorded_at
    from ${schema}.events where (tx_order, position) > ($1, $2) order by tx_order, position limit $3`;

  return {
    async append(streamId, version, events) {
      const occurredAt = new Date().toISOString();
      const values = [streamId];
      events.forEach((event, i) => values.push(version + i + 1, randomUUID(), event.type, JSON.stringify(event.data), '{}', occurredAt));
      await pool.query(insertText(events.length), values);
    },
    async readPage(after, limit) {
      const { rows } = await pool.query(readSql, [after?.tx_order ?? 0, after?.position ?? 0, limit]);
      return { count: rows.length, after: rows.at(-1) };
    },
    analyze: () => pool.query(`analyze ${schema}.events`),
    async close() {
      try {
        await pool.query(`drop schema ${schema} cascade`);
      } finally {
        await guarded.end();
      }
    },
  };
}

await runContender(async (run) => runEventStoreWorkload(await openRaw(run)));
