-- Reconciliation on the effect ledger, and charges built on it.

-- An effect whose type can ask its provider "did key K happen?" is settled by the answer:
-- `failed` when the provider confirmed it did not happen and the policy says not to retry,
-- `needs-review` when the provider could not say before the business deadline. `checks` counts
-- the questions asked, `check_after` is the backoff's next time, `checked_by` the advisory-lock
-- token of the reconciler asking now (a dead reconciler's lock is gone, so its rows are free).
alter table effects drop constraint effects_state_check;
alter table effects add constraint effects_state_check
  check (state in ('reserved', 'done', 'uncertain', 'failed', 'needs-review'));
alter table effects
  add column checks integer not null default 0,
  add column check_after timestamptz,
  add column checked_by integer;
-- Effects made on a request's path (a charge's capture) belong to no event.
alter table effects alter column event_id drop not null;
-- What a reconciler scans: unsettled effects of the types it can ask about.
create index effects_unsettled on effects (effect_type, reserved_at) where state in ('reserved', 'uncertain');

-- A charge is the request a client made: its amount, customer and idempotency key. Its state is
-- the effect ledger entry of its capture (key 'charge:<id>'), the one record of whether the money
-- moved: reserved or uncertain is PENDING, done CAPTURED, failed FAILED, needs-review NEEDS_REVIEW.
create table charges (
  id uuid primary key,
  idempotency_key text collate "C" not null unique,
  -- the request's fingerprint: a key reused for another request is refused
  request_hash text not null,
  customer_id text collate "C" not null,
  amount_cents bigint not null check (amount_cents > 0),
  currency text not null,
  created_at timestamptz not null default now()
);
create index charges_by_created on charges (created_at);
