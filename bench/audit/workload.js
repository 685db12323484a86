// The audit workload: a sound deployment seeded by set-based SQL into a fresh bench schema (setup,
// not measured). Per 100,000 events of history: 10,000 orders of five snapshots each with their
// normalized rows (exactly the normalizer's fold) and the live checkpoint at their end; 5,000
// accounts of ten events with a snapshot at version 10; 10,000 charges CAPTURED with their
// ledger entries, ChargeStarted and ChargeCaptured, published by a relay run.
import { createEventStore, migrate, openDatabase } from 'rastro';
import { DATABASE_URL } from '../shared/database.js';

export const AUDIT = Object.freeze({
  /** Events of history of the incremental rows; the full audit runs over the last. */
  sizes: (process.env.BENCH_AUDIT_SIZES ?? '100000,1000000').split(',').map(Number),
  /** New events before an incremental audit: half order snapshots, half account events. */
  newEvents: 10_000,
});

export const sizeKey = (size) => (size >= 1_000_000 ? `${size / 1_000_000}m` : `${size / 1000}k`);

const ISO = (ts) => `to_char(${ts} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const STATUS = `(array['requested', 'requested', 'partial', 'partial', 'received'])[v]`;

/** Orders `from`..`to` (five snapshots each), their rows as the normalizer folds them, in `tx`. */
async function addOrders(tx, s, from, to) {
  const at = `('2026-01-01T00:00:00Z'::timestamptz + o * interval '1 second' + v * interval '1 minute')`;
  const id = `md5('order' || o || ':' || v)::uuid`;
  await tx.query(`insert into ${s}.streams (stream_id, version, tx_order)
    select 'order:pied:b' || o, 5, pg_current_xact_id()::text::bigint from generate_series($1::int, $2::int) o`, [from, to]);
  await tx.query(`insert into ${s}.events (tx_order, stream_id, stream_version, id, type, data, occurred_at)
    select pg_current_xact_id()::text::bigint, 'order:pied:b' || o, v, ${id}, 'order.snapshot',
      jsonb_build_object('source', 'pied', 'channel', 'webhook', 'orderId', 'b' || o, 'status', ${STATUS}, 'lastUpdate', ${ISO(at)}, 'payload', '{}'::jsonb),
      ${at}
    from generate_series($1::int, $2::int) o, generate_series(1, 5) v order by o, v`, [from, to]);
  const last = at.replace(/\bv\b/g, '5');
  await tx.query(`insert into ${s}.projections (projection, key, doc, observed_at, event_id)
    select 'order', 'pied:b' || o, jsonb_build_object('source', 'pied', 'orderId', 'b' || o, 'status', 'received', 'lifecycle', 'captured',
        'lastUpdate', ${ISO(last)}, 'paidAt', ${ISO(last)}, 'partialSince', null, 'cancelledAfterImportAt', null, 'importedAt', null,
        'importFailure', null, 'invoice', null, 'customer', null, 'payload', '{}'::jsonb, 'snapshotEventId', md5('order' || o || ':5')::uuid),
      ${last}, md5('order' || o || ':5')::uuid
    from generate_series($1::int, $2::int) o`, [from, to]);
}

/** Accounts `from`..`to` (opened, nine deposits of 10), each with its snapshot at version 10, in `tx`. */
async function addAccounts(tx, s, from, to) {
  const opened = `('2026-01-01T00:00:00Z'::timestamptz + a * interval '1 second')`;
  await tx.query(`insert into ${s}.streams (stream_id, version, tx_order)
    select 'account-a' || a, 10, pg_current_xact_id()::text::bigint from generate_series($1::int, $2::int) a`, [from, to]);
  await tx.query(`insert into ${s}.events (tx_order, stream_id, stream_version, id, type, data, occurred_at)
    select pg_current_xact_id()::text::bigint, 'account-a' || a, v, md5('account' || a || ':' || v)::uuid,
      case when v = 1 then 'AccountOpened' else 'AccountDeposited' end,
      case when v = 1 then jsonb_build_object('owner', 'Owner ' || a) else jsonb_build_object('amount', 10) end,
      ${opened} + v * interval '1 millisecond'
    from generate_series($1::int, $2::int) a, generate_series(1, 10) v order by a, v`, [from, to]);
  await tx.query(`insert into ${s}.snapshots (stream_id, version, state)
    select 'account-a' || a, 10, jsonb_build_object('owner', 'Owner ' || a, 'createdAt', ${ISO(`(${opened} + interval '1 millisecond')`)}, 'balance', 90)
    from generate_series($1::int, $2::int) a`, [from, to]);
}

/** Charges 1..`count`, CAPTURED, with their ledger entries and both outbox messages, in `tx`. */
async function addCharges(tx, s, count) {
  const id = `md5('charge' || c)::uuid`;
  await tx.query(`insert into ${s}.charges (id, idempotency_key, request_hash, customer_id, amount_cents, currency)
    select ${id}, 'key-' || c, md5('request' || c), 'customer-' || c, 1000 + c, 'BRL' from generate_series(1, $1::int) c`, [count]);
  await tx.query(`insert into ${s}.effects (key, event_id, effect_type, state, run_id, on_failure, owner_token, result)
    select 'charge:' || ${id}, null, 'charge.capture', 'done', 'request', 'keep', 0, jsonb_build_object('captureId', 'cap-' || c, 'amountCents', 1000 + c, 'currency', 'BRL')
    from generate_series(1, $1::int) c`, [count]);
  await tx.query(`insert into ${s}.outbox (tx_order, id, aggregate_type, aggregate_id, type, payload)
    select pg_current_xact_id()::text::bigint, md5('message' || c || t)::uuid, 'charge', ${id}::text, t, jsonb_build_object('chargeId', ${id})
    from generate_series(1, $1::int) c, unnest(array['ChargeStarted', 'ChargeCaptured']) t order by c, t desc`, [count]);
}

/** The live normalizer and the relay, checkpointed at the end of what they read: everything handled and published. */
async function checkpointAll(tx, s) {
  await tx.query(`insert into ${s}.processor_runs (run_id, processor, mode, policy, partitions) values ('live:orders', 'orders', 'live', '{}', 8) on conflict do nothing`);
  await tx.query(`insert into ${s}.processor_runs (run_id, processor, mode, policy, source, partitions) values ('relay:outbox', 'outbox', 'relay', '{}', 'outbox', 8) on conflict do nothing`);
  for (const [run, table] of [['live:orders', 'events'], ['relay:outbox', 'outbox']]) {
    await tx.query(`insert into ${s}.processor_checkpoints (run_id, partition, tx_order, position)
      select $1, p, l.tx_order, l.position from generate_series(0, 7) p, (select tx_order, position from ${s}.${table} order by tx_order desc, position desc limit 1) l
      on conflict (run_id, partition) do update set tx_order = excluded.tx_order, position = excluded.position`, [run]);
  }
}

const TABLES = ['events', 'streams', 'projections', 'snapshots', 'charges', 'effects', 'outbox', 'processor_checkpoints'];

/** A fresh schema holding a sound deployment of `size` events of history. */
export async function openDeployment(prefix, size) {
  const db = await openDatabase({ url: DATABASE_URL, poolSize: 4 });
  const schema = `${prefix}_${sizeKey(size)}`;
  const s = `"${schema}"`;
  await db.query(`drop schema if exists ${s} cascade`);
  await migrate(db, { schema });
  const unit = size / 100_000;
  await db.transaction(async (tx) => {
    await addOrders(tx, s, 1, 10_000 * unit);
    await addAccounts(tx, s, 1, 5_000 * unit);
    await addCharges(tx, s, 10_000 * unit);
    await checkpointAll(tx, s);
  });
  for (const table of TABLES) await db.query(`vacuum analyze ${s}.${table}`);
  let added = 0;
  return {
    db, schema, store: createEventStore(db, { schema }), tables: TABLES,
    /** Setup, not measured: 10,000 new events (1,000 new orders, 500 new accounts), handled as the live runs would. */
    async addEvents() {
      const orders = 10_000 * unit;
      const accounts = 5_000 * unit;
      const n = AUDIT.newEvents;
      await db.transaction(async (tx) => {
        await addOrders(tx, s, orders + added * (n / 10) + 1, orders + (added + 1) * (n / 10));
        await addAccounts(tx, s, accounts + added * (n / 20) + 1, accounts + (added + 1) * (n / 20));
        await checkpointAll(tx, s);
      });
      added++;
    },
    async close() {
      await db.query(`drop schema ${s} cascade`);
      await db.close();
    },
  };
}
