-- Runs read each event with its effect ledger entries: a lookup by event id (a uuid) instead of
-- building and comparing text keys.
create index effects_by_event on effects (event_id);
