-- The position of the event an effect belongs to: a batch finds its events' ledger entries with
-- one range scan over the positions it read, where looking up each event id costs an index
-- descent per event. Entries without an event (a charge's capture) have none.
alter table effects add column event_position bigint;
update effects f set event_position = e.position from events e where e.id = f.event_id;
create index effects_by_event_position on effects (event_position) where event_position is not null;

-- An entry inserted without it (by a runner of an earlier version, still running during an
-- upgrade) is given its event's position, so the range scan finds every entry of its events.
create function effects_event_position() returns trigger language plpgsql as $$
begin
  execute format('select position from %I.events where id = $1', tg_table_schema) into new.event_position using new.event_id;
  return new;
end $$;
create trigger effects_event_position before insert on effects
  for each row when (new.event_position is null and new.event_id is not null)
  execute function effects_event_position();
