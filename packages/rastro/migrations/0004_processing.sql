-- Processors: state they write, the effect ledger, checkpoints, parked events, run bookkeeping.

-- State written by processors through guarded upserts. `version` is the aggregate version of the
-- event that wrote the row (version guard); `observed_at` the source's observation time
-- (recency guard). A row is only overwritten by a write at the same or a newer value.
create table projections (
  projection text not null,
  key text not null,
  doc jsonb not null,
  version bigint,
  observed_at timestamptz,
  event_id uuid,
  updated_at timestamptz not null default now(),
  primary key (projection, key)
);

-- One row per external effect, keyed '<event id>:<effect type>' by live and replay runs alike.
create table effects (
  key text primary key,
  event_id uuid not null,
  effect_type text not null,
  state text not null check (state in ('reserved', 'done', 'uncertain')),
  run_id text not null,
  -- what the run's policy said to do if the call fails: release (provider deduplicates) or keep
  on_failure text not null check (on_failure in ('release', 'keep')),
  -- the reserving runner's advisory-lock token: when the lock is gone, the owner is dead
  owner_token integer not null,
  result jsonb,
  error text,
  reserved_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create index effects_open on effects (state, reserved_at) where state <> 'done';

-- A run: the live run of a processor, or a replay with its own id, policy and window.
create table processor_runs (
  run_id text primary key,
  processor text not null,
  mode text not null check (mode in ('live', 'replay')),
  simulate boolean not null default false,
  policy jsonb not null,
  window_from timestamptz,
  window_to timestamptz,
  from_position bigint,
  to_position bigint,
  total_events bigint,
  status text not null default 'running' check (status in ('running', 'completed')),
  started_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- Checkpoints: one per run and partition (replays use partition 0 only).
create table processor_checkpoints (
  run_id text not null,
  partition integer not null,
  tx_order bigint not null default 0,
  position bigint not null default 0,
  updated_at timestamptz not null default now(),
  primary key (run_id, partition)
);

create table run_counters (
  run_id text not null,
  name text not null,
  value bigint not null default 0,
  primary key (run_id, name)
);

-- Simulate: one row per state key a run would change.
create table replay_diffs (
  run_id text not null,
  projection text not null,
  key text not null,
  before jsonb,
  after jsonb not null,
  primary key (run_id, projection, key)
);

-- Events a processor could not handle, and the later events of their streams waiting behind them.
create table parked_events (
  processor text not null,
  event_id uuid not null,
  stream_id text not null,
  position bigint not null,
  run_id text not null,
  reason text not null check (reason in ('failed', 'waiting')),
  error text,
  parked_at timestamptz not null default now(),
  primary key (run_id, event_id)
);

create index parked_events_stream on parked_events (run_id, stream_id, position);

-- Live runners of a processor, for sharing partitions fairly.
create table processor_runners (
  processor text not null,
  runner_token integer not null,
  heartbeat_at timestamptz not null default now(),
  primary key (processor, runner_token)
);
