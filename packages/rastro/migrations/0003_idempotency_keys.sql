-- Idempotency keys for POST requests: the first response, stored in the transaction that
-- appended its events. `owner` identifies the request that holds an in-flight key.
create table idempotency_keys (
  key text primary key,
  request_hash text not null,
  owner uuid not null,
  state text not null check (state in ('in_flight', 'done')),
  response_status integer,
  response_body jsonb,
  locked_at timestamptz not null default now(),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);

create index idempotency_keys_expires_at on idempotency_keys (expires_at);
