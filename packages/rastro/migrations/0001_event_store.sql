-- The event log. Runs with search_path set to the configured schema.

-- One row per stream: its version, and the transaction order of its latest append, so a
-- later append to the same stream never sorts before an earlier one (see docs/operations.md).
create table streams (
  stream_id text primary key,
  version bigint not null check (version > 0),
  tx_order bigint not null
);

create table events (
  position bigint generated always as identity,
  -- The appending transaction's id (pg_current_xact_id() plus store_settings.tx_order_offset),
  -- raised to the stream's previous value when lower. Readers deliver in (tx_order, position)
  -- order and only below the oldest running transaction, so no committed event is skipped.
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

create index events_tx_order_position on events (tx_order, position);

-- A single row. tx_order_offset moves only through `rastro store rebase`, after a restore into
-- another cluster whose transaction ids are behind the ones recorded in the log.
create table store_settings (
  singleton boolean primary key default true check (singleton),
  tx_order_offset bigint not null default 0
);
insert into store_settings default values;

create function refuse_event_change() returns trigger language plpgsql as $$
begin
  raise exception 'events are immutable: % on %.% is refused', tg_op, tg_table_schema, tg_table_name
    using errcode = 'restrict_violation';
end
$$;

create trigger events_immutable_rows before update or delete on events
  for each row execute function refuse_event_change();
create trigger events_immutable_truncate before truncate on events
  for each statement execute function refuse_event_change();
-- ALWAYS: the triggers fire under session_replication_role = replica too.
alter table events enable always trigger events_immutable_rows;
alter table events enable always trigger events_immutable_truncate;

create function notify_events_appended() returns trigger language plpgsql as $$
begin
  perform pg_notify('rastro_events_' || tg_table_schema, '');
  return null;
end
$$;

create trigger events_appended after insert on events
  for each statement execute function notify_events_appended();
