// Builds a log of `events` events in a migrated rastro schema, as the store would have written
// them but in minutes: account streams of 50 events (AccountOpened, then 49 AccountDeposited of 1),
// inserted by the server from generate_series in transactions of a million events, each with its
// own tx_order (its transaction id, as an append's) and the streams rows of its accounts. The
// events table's keys and index are dropped for the load and built again after it, under their
// own names, so every constraint is checked; then the tables are vacuumed and analyzed, as
// autovacuum leaves a table that grew over time.
import pg from 'pg';
import { DATABASE_URL } from '../shared/database.js';

export const EVENTS_PER_ACCOUNT = 50;
const BATCH = 1_000_000;

/** The account id of stream number `n` of a built log (a UUID from its number). */
export const accountIdSql = (n) => `md5('growth-account:' || ${n})::uuid`;

/** Builds the log; resolves the number of accounts and the seconds the build took. */
export async function buildLog(schema, events, onProgress = () => undefined) {
  if (events % EVENTS_PER_ACCOUNT !== 0) throw new Error(`a log of ${events} events is not whole accounts of ${EVENTS_PER_ACCOUNT}`);
  const s = schema;
  const client = new pg.Client({ connectionString: DATABASE_URL, application_name: `${schema}-build` });
  let broken;
  client.on('error', (err) => (broken ??= err));
  await client.connect();
  const started = Date.now();
  try {
    await client.query(`set synchronous_commit = off; set maintenance_work_mem = '256MB'`);
    await client.query(`alter table ${s}.events drop constraint events_pkey, drop constraint events_id_key; drop index ${s}.events_tx_order_position`);
    for (let first = 0; first < events; first += BATCH) {
      const last = Math.min(events, first + BATCH) - 1;
      await client.query('begin');
      const txOrder = `(select pg_current_xact_id()::text::bigint + tx_order_offset from ${s}.store_settings)`;
      await client.query(
        `insert into ${s}.events (tx_order, stream_id, stream_version, id, type, data, metadata, occurred_at)
         select t.tx_order, 'account-' || ${accountIdSql(`g / ${EVENTS_PER_ACCOUNT}`)}, g % ${EVENTS_PER_ACCOUNT} + 1, md5('growth-event:' || g)::uuid,
                case when g % ${EVENTS_PER_ACCOUNT} = 0 then 'AccountOpened' else 'AccountDeposited' end,
                case when g % ${EVENTS_PER_ACCOUNT} = 0 then jsonb_build_object('owner', 'growth ' || g / ${EVENTS_PER_ACCOUNT}) else '{"amount": 1}'::jsonb end,
                '{}'::jsonb, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 millisecond'
           from generate_series($1::bigint, $2::bigint) g, (select ${txOrder} as tx_order) t
          order by g`,
        [first, last],
      );
      await client.query(
        `insert into ${s}.streams (stream_id, version, tx_order)
         select 'account-' || ${accountIdSql('a')}, ${EVENTS_PER_ACCOUNT}, ${txOrder}
           from generate_series($1::bigint, $2::bigint) a`,
        [first / EVENTS_PER_ACCOUNT, (last + 1) / EVENTS_PER_ACCOUNT - 1],
      );
      await client.query('commit');
      onProgress(last + 1);
    }
    await client.query(`alter table ${s}.events add constraint events_pkey primary key (stream_id, stream_version), add constraint events_id_key unique (id)`);
    await client.query(`create index events_tx_order_position on ${s}.events (tx_order, position)`);
    await client.query(`vacuum analyze ${s}.events`);
    await client.query(`vacuum analyze ${s}.streams`);
  } finally {
    await client.end().catch(() => undefined);
  }
  if (broken) throw new Error(`the connection building ${schema} failed: ${broken.message}`, { cause: broken });
  return { accounts: events / EVENTS_PER_ACCOUNT, seconds: (Date.now() - started) / 1000 };
}
