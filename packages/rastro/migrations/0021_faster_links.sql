-- The same links as migration 0019, computed faster: each field's bytes are converted once, not
-- once for their length and again for themselves, and a batch's links are computed in one loop
-- rather than by a call per event. The bytes hashed, and so every link, are unchanged: chains
-- written before and after this migration verify alike.
create or replace function event_link(prev bytea, id uuid, stream_id text, stream_version bigint, schema_version smallint, occurred_at timestamptz,
    recorded_at timestamptz, type text, data jsonb, metadata jsonb) returns bytea
  language plpgsql immutable parallel safe
as $$
declare
  s bytea := convert_to(stream_id, 'UTF8');
  t bytea := convert_to(type, 'UTF8');
  d bytea := convert_to(data::text, 'UTF8');
  m bytea := convert_to(metadata::text, 'UTF8');
begin
  return sha256(coalesce(prev, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea)
    || uuid_send(id) || int8send(stream_version) || int2send(schema_version)
    || int8send((extract(epoch from occurred_at) * 1000000)::bigint) || int8send((extract(epoch from recorded_at) * 1000000)::bigint)
    || int4send(octet_length(s)) || s || int4send(octet_length(t)) || t
    || int4send(octet_length(d)) || d || int4send(octet_length(m)) || m);
end
$$;

create or replace function event_chain(prev bytea, stream_id text, first_version bigint, ids uuid[], types text[], data jsonb[],
    metadata jsonb[], occurred_at timestamptz[], schema_versions smallint[], recorded_at timestamptz) returns bytea[]
  language plpgsql immutable parallel safe
as $$
declare
  links bytea[] := '{}';
  link bytea := coalesce(prev, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea);
  s bytea := convert_to(stream_id, 'UTF8');
  fixed bytea := int8send((extract(epoch from recorded_at) * 1000000)::bigint) || int4send(octet_length(s)) || s;
  t bytea;
  d bytea;
  m bytea;
begin
  for i in 1 .. cardinality(ids) loop
    t := convert_to(types[i], 'UTF8');
    d := convert_to(data[i]::text, 'UTF8');
    m := convert_to(metadata[i]::text, 'UTF8');
    link := sha256(link || uuid_send(ids[i]) || int8send(first_version + i - 1) || int2send(schema_versions[i])
      || int8send((extract(epoch from occurred_at[i]) * 1000000)::bigint) || fixed
      || int4send(octet_length(t)) || t || int4send(octet_length(d)) || d || int4send(octet_length(m)) || m);
    links[i] := link;
  end loop;
  return links;
end
$$;
