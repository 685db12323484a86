-- Faster lookups for runs.
-- Runs read each event with its effect ledger entries: a lookup by event id (a uuid) instead of
-- building and comparing text keys.
create index effects_by_event on effects (event_id);

-- Keys are identifiers, not prose: byte order compares them several times faster than a
-- locale's collation, and the order no longer depends on the server's locale.
alter table projections
  alter column projection type text collate "C",
  alter column key type text collate "C";
alter table effects alter column key type text collate "C";
