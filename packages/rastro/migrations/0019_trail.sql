-- The trail proves itself (docs/trail.md). Each event's hash chains to the hash of its stream's
-- previous event; a sealer seals the log, in global commit order, into blocks whose Merkle roots
-- cover the events' hashes and whose hashes chain; digests of the head block leave the database.

-- The link of one event: SHA-256 over the previous event's hash (32 zero bytes for a stream's
-- first), then the event's content in a fixed binary layout: its id (16 bytes), stream version
-- (int8), schema version (int2), occurred_at and recorded_at (int8 microseconds since 1970), then
-- its stream id, type, data and metadata, each as a 4-byte length and UTF-8 bytes. Data and
-- metadata are PostgreSQL's jsonb text: one spelling per stored value (keys in a fixed order, no
-- duplicates). Only built-in functions: it gives the same bytes whatever the search path.
create function event_link(prev bytea, id uuid, stream_id text, stream_version bigint, schema_version smallint, occurred_at timestamptz,
    recorded_at timestamptz, type text, data jsonb, metadata jsonb) returns bytea
  language sql immutable parallel safe
  return sha256(coalesce(prev, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea)
    || uuid_send(id) || int8send(stream_version) || int2send(schema_version)
    || int8send((extract(epoch from occurred_at) * 1000000)::bigint) || int8send((extract(epoch from recorded_at) * 1000000)::bigint)
    || int4send(octet_length(convert_to(stream_id, 'UTF8'))) || convert_to(stream_id, 'UTF8')
    || int4send(octet_length(convert_to(type, 'UTF8'))) || convert_to(type, 'UTF8')
    || int4send(octet_length(convert_to(data::text, 'UTF8'))) || convert_to(data::text, 'UTF8')
    || int4send(octet_length(convert_to(metadata::text, 'UTF8'))) || convert_to(metadata::text, 'UTF8'));

-- The links of a batch appended to one stream after `prev`, its first at `first_version`: what an
-- append stores with its events, in its own statement.
create function event_chain(prev bytea, stream_id text, first_version bigint, ids uuid[], types text[], data jsonb[],
    metadata jsonb[], occurred_at timestamptz[], schema_versions smallint[], recorded_at timestamptz) returns bytea[]
  language plpgsql immutable parallel safe set search_path from current
as $$
declare
  links bytea[] := '{}';
  link bytea := prev;
begin
  for i in 1 .. cardinality(ids) loop
    link := event_link(link, ids[i], stream_id, first_version + i - 1, schema_versions[i], occurred_at[i], recorded_at, types[i], data[i], metadata[i]);
    links := links || link;
  end loop;
  return links;
end
$$;

alter table events add column hash bytea;
-- The hash of the stream's last event (`head`), and the head its last append chained from (`base`):
-- the append reads the head through the stream's row lock, so a batch chains to whatever committed
-- before it, however late.
alter table streams add column head bytea, add column base bytea;

-- Events appended before the chain existed, chained here once and never rewritten (invariant 4):
-- their hashes live beside them.
create table event_hashes (
  position bigint primary key,
  hash bytea not null
);

do $$
declare
  e record;
  stream text;
  link bytea;
begin
  for e in select * from events order by stream_id, stream_version loop
    if e.stream_id is distinct from stream then
      stream := e.stream_id;
      link := null;
    end if;
    link := event_link(link, e.id, e.stream_id, e.stream_version, e.schema_version, e.occurred_at, e.recorded_at, e.type, e.data, e.metadata);
    insert into event_hashes (position, hash) values (e.position, link);
  end loop;
end
$$;
update streams s set head = h.hash
  from events e join event_hashes h on h.position = e.position
  where e.stream_id = s.stream_id and e.stream_version = s.version;

-- Sealed blocks: the log in global commit order (tx_order, position), each block the events after
-- the previous one's last, below the no-skip frontier when it was sealed. `root` is the Merkle root
-- of its events' hashes (docs/trail.md), `hash` chains it to the previous block.
create table trail_blocks (
  block bigint primary key check (block > 0),
  first_tx_order bigint not null,
  first_position bigint not null,
  last_tx_order bigint not null,
  last_position bigint not null,
  events integer not null check (events > 0),
  root bytea not null,
  prev bytea not null,
  hash bytea not null,
  sealed_at timestamptz not null default now()
);

-- Where verification stopped, and what it last saw of the events table's deletes and updates.
create table trail_verifications (
  id bigint generated always as identity primary key,
  started_at timestamptz not null,
  finished_at timestamptz not null,
  full_scan boolean not null,
  -- the last block and the last event position it checked
  block bigint not null,
  position bigint not null,
  -- the events table's cumulative deletes and updates as the statistics counted them then
  deleted bigint not null,
  updated bigint not null,
  findings jsonb not null
);

-- Digests of the head block published by serve (to a folder or the broker): where and when.
create table trail_digests (
  id bigint generated always as identity primary key,
  block bigint not null,
  hash bytea not null,
  published_at timestamptz not null default now(),
  target text not null
);

create trigger event_hashes_immutable_rows before update or delete on event_hashes
  for each row execute function refuse_event_change();
create trigger event_hashes_immutable_truncate before truncate on event_hashes
  for each statement execute function refuse_event_change();
create trigger trail_blocks_immutable_rows before update or delete on trail_blocks
  for each row execute function refuse_event_change();
create trigger trail_blocks_immutable_truncate before truncate on trail_blocks
  for each statement execute function refuse_event_change();
-- As the events' own: a replica's session_replication_role does not turn them off.
alter table event_hashes enable always trigger event_hashes_immutable_rows;
alter table event_hashes enable always trigger event_hashes_immutable_truncate;
alter table trail_blocks enable always trigger trail_blocks_immutable_rows;
alter table trail_blocks enable always trigger trail_blocks_immutable_truncate;
