-- Snapshots: a stream's folded state at a version, so a long stream loads from the latest
-- snapshot plus the events after it. Derived data: they can be dropped and rebuilt from events.
create table snapshots (
  stream_id text primary key,
  version bigint not null check (version > 0),
  state jsonb not null,
  taken_at timestamptz not null default now()
);
