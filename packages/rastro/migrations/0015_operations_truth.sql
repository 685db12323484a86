-- What an operator sees, derived from what the system acts on.

-- Run liveness. A replay records the token of its runner session (whose advisory lock it holds
-- while it lives); live runs and relays have their runners in processor_runners. `heartbeat_at`
-- is the last time a runner of the run was seen alive, `stopped_at` when its last runner stopped
-- cleanly: a run no live runner holds is stopped, or dead since its last heartbeat.
alter table processor_runs
  add column runner_token integer,
  add column heartbeat_at timestamptz,
  add column stopped_at timestamptz;
update processor_runs set heartbeat_at = updated_at;
alter table processor_runs alter column heartbeat_at set default now();

-- When an effect entered its state: `updated_at` moves at every reconciliation pass.
alter table effects add column state_since timestamptz;
update effects set state_since = case when state = 'reserved' then reserved_at else updated_at end;
alter table effects alter column state_since set default now(), alter column state_since set not null;

-- A simulate run's failures: its own record, beside its diff, never in the operational queue
-- (parked_events), its figures or its alerts. Same shape as parked_events.
create table simulate_failures (
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
create index simulate_failures_stream on simulate_failures (run_id, stream_id, position);

insert into simulate_failures (processor, event_id, stream_id, position, run_id, reason, error, parked_at)
  select p.processor, p.event_id, p.stream_id, p.position, p.run_id, p.reason, p.error, p.parked_at
    from parked_events p join processor_runs r on r.run_id = p.run_id where r.simulate;
delete from parked_events p using processor_runs r where r.run_id = p.run_id and r.simulate;
