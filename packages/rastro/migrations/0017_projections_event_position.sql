-- The position of the event whose write a row holds. A replay reads, with each batch of events,
-- the rows of its projections that those events wrote last (one range scan over the positions
-- it read), so its handlers' writes are checked against them without a probe's round trip; a
-- row not found this way is probed as before.
alter table projections add column event_position bigint;
update projections p set event_position = e.position from events e where e.id = p.event_id;
create index projections_by_event_position on projections (event_position) where event_position is not null;
