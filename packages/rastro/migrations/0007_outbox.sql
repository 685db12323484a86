-- The transactional outbox, its relays, and the inbox's dead letters.

-- One row per aggregate that has written outbox messages: like `streams` for the event log, it
-- is the lock that orders one aggregate's writers, and `tx_order` is raised to the aggregate's
-- previous value so the relay's (tx_order, position) order never reverses an aggregate's commits.
create table outbox_aggregates (
  aggregate_type text collate "C" not null,
  aggregate_id text collate "C" not null,
  tx_order bigint not null,
  primary key (aggregate_type, aggregate_id)
);

-- Messages to publish, written in the caller's transaction. Relays read them in (tx_order,
-- position) order below the oldest running transaction, the event store's no-skip rule, and
-- keep a checkpoint per partition: no row is updated when it is published. Published rows are
-- deleted by retention, in bounded batches, or a whole day at a time when daily partitions are
-- used (docs/outbox.md); rows land in the default partition until daily ones are created.
create table outbox (
  position bigint generated always as identity,
  tx_order bigint not null,
  id uuid not null,
  aggregate_type text collate "C" not null,
  aggregate_id text collate "C" not null,
  type text not null,
  payload jsonb not null,
  headers jsonb not null default '{}'::jsonb,
  traceparent text,
  created_at timestamptz not null default now(),
  primary key (position, created_at)
) partition by range (created_at);

create table outbox_default partition of outbox default;
create index outbox_tx_order_position on outbox (tx_order, position);
create index outbox_created_at on outbox (created_at);

-- Relays are runs too: their checkpoints, counters and parked messages live in the processing
-- tables. `source` says what a run reads (the outbox, or the event log); `partitions` how many
-- partitions its runners share, fixed per run, so retention can tell what each one published.
alter table processor_runs drop constraint processor_runs_mode_check;
alter table processor_runs add constraint processor_runs_mode_check check (mode in ('live', 'replay', 'relay'));
alter table processor_runs add column source text;
alter table processor_runs add column partitions integer;

-- Messages the inbox could not store (not rastro's format, or an id already used with other
-- content). Kept with the reason, then acknowledged: never dropped in silence.
create table inbox_dead_letters (
  id bigint generated always as identity primary key,
  broker text not null,
  source text not null,
  message_id text,
  reason text not null,
  body text not null,
  headers jsonb not null default '{}'::jsonb,
  received_at timestamptz not null default now()
);
