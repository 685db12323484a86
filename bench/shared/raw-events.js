import pg from 'pg';

/** Same result parsing as rastro: int8 as number, jsonb through pg's JSON.parse. */
export const rawTypes = { getTypeParser: (oid, format) => (oid === 20 ? Number : pg.types.getTypeParser(oid, format)) };

/**
 * A table shaped like rastro's events table (same columns, keys and index), without rastro's
 * streams table, triggers or checks. `s` is the schema, which must exist.
 */
export const eventsTableSql = (s) => `
create table ${s}.events (
  position bigint generated always as identity,
  tx_order bigint not null,
  stream_id text not null,
  stream_version bigint not null,
  id uuid not null,
  type text not null,
  data jsonb not null,
  metadata jsonb not null default '{}'::jsonb,
  occurred_at timestamptz not null,
  recorded_at timestamptz not null default now(),
  constraint events_pkey primary key (stream_id, stream_version),
  constraint events_id_key unique (id)
);
create index events_tx_order_position on ${s}.events (tx_order, position);`;
