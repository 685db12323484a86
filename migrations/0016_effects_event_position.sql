-- The position of the event an effect belongs to: a batch finds its events' ledger entries with
-- one range scan over the positions it read, where looking up each event id costs an index
-- descent per event. Entries without an event (a charge's capture) have none.
alter table effects add column event_position bigint;
update effects f set event_position = e.position from events e where e.id = f.event_id;
create index effects_by_event_position on effects (event_position) where event_position is not null;
