-- The audit's own bookkeeping. The audit reads every other table and writes only these.

-- One row per check: where its last audit stopped. `tx_order` is the log's (and the outbox's)
-- frontier then: rows at or above it are new. `oldest_xid` is the oldest transaction running then
-- (64-bit): rows whose transaction id is at or above it were written since. `memory` holds what
-- the check compares with next time (checkpoints it saw, the triggers' row versions, the rows it
-- found wrong, which it examines again).
create table audit_checkpoints (
  check_name text collate "C" primary key,
  tx_order bigint not null,
  oldest_xid bigint not null,
  memory jsonb not null default '{}'::jsonb,
  audited_at timestamptz not null
);

-- One row per audit, and its findings: what the console, /ops/audit and the metrics show.
create table audit_runs (
  id bigint generated always as identity primary key,
  started_at timestamptz not null,
  finished_at timestamptz not null,
  full_scan boolean not null,
  -- every check ran (not a --check subset): only such an audit, found clean, proves a clean deployment
  complete boolean not null,
  -- per check: rows examined, findings, whether it ran incrementally, and its figures (lag)
  checks jsonb not null,
  findings integer not null
);

create table audit_findings (
  audit_id bigint not null references audit_runs (id) on delete cascade,
  n integer not null,
  check_name text not null,
  kind text not null,
  subject_type text not null,
  subject_id text not null,
  detail text not null,
  action text not null,
  age_seconds double precision,
  primary key (audit_id, n)
);
