import { outboxWriteCtes } from '../outbox/sql.js';

/** The charge's capture in the effect ledger: one entry per charge, the one record of its state. */
export const CAPTURE_EFFECT = 'charge.capture';

/** The ledger key of a charge's capture. */
export function captureKey(chargeId: string): string {
  return `charge:${chargeId}`;
}

/** A charge's status, read from its capture's ledger state. */
function status(e: string): string {
  return `case ${e}.state when 'done' then 'CAPTURED' when 'failed' then 'FAILED' when 'needs-review' then 'NEEDS_REVIEW' else 'PENDING' end`;
}

const CHARGE_COLUMNS = (c: string, e: string) => `${c}.id, ${c}.idempotency_key, ${c}.request_hash, ${c}.customer_id, ${c}.amount_cents::float8 as amount_cents, ${c}.currency,
  ${c}.created_at, ${e}.updated_at, ${status(e)} as status, ${e}.result, ${e}.error, ${e}.checks,
  -- A charge is PENDING from its creation (its capture reserved, then perhaps uncertain); in any other status since its capture settled.
  case when ${e}.state in ('reserved', 'uncertain') then ${c}.created_at else ${e}.state_since end as status_since`;

/** Statuses of the API, and the ledger states behind them. */
export const STATES_OF_STATUS: Readonly<Record<string, readonly string[]>> = {
  PENDING: ['reserved', 'uncertain'],
  CAPTURED: ['done'],
  FAILED: ['failed'],
  NEEDS_REVIEW: ['needs-review'],
};

/** `o`, the outbox's schema (validated and quoted), when its messages are written with the charge's rows. */
export function chargeSql(s: string, o: string = s) {
  return {
    /**
     * The charge and its intent, PENDING, and its `ChargeStarted` message ($8 to $14), in one
     * statement and one commit ($7 the capture's key): the capture reserved before the acquirer is
     * called, only when the charge is new. No row when the idempotency key is taken.
     */
    insert: `with charge as (
        insert into ${s}.charges (id, idempotency_key, request_hash, customer_id, amount_cents, currency)
        values ($1, $2, $3, $4, $5, $6) on conflict (idempotency_key) do nothing returning id),
      reserved as (
        insert into ${s}.effects (key, event_id, effect_type, state, run_id, on_failure, owner_token)
        select $7, null, '${CAPTURE_EFFECT}', 'reserved', 'request', 'keep', 0 from charge
        returning key),
      ${outboxWriteCtes(o, 'charge', 8)}
      select key from reserved`,
    byKey: `select ${CHARGE_COLUMNS('c', 'e')} from ${s}.charges c join ${s}.effects e on e.key = 'charge:' || c.id::text
      where c.idempotency_key = $1`,
    byId: `select ${CHARGE_COLUMNS('c', 'e')} from ${s}.charges c join ${s}.effects e on e.key = 'charge:' || c.id::text
      where c.id = $1`,
    list: `select ${CHARGE_COLUMNS('c', 'e')} from ${s}.charges c join ${s}.effects e on e.key = 'charge:' || c.id::text
      where ($1::text[] is null or e.state = any($1::text[]))
        and ($3::uuid is null or (c.created_at, c.id) < (select a.created_at, a.id from ${s}.charges a where a.id = $3::uuid))
      order by c.created_at desc, c.id desc limit $2`,
    /** Whether a charge exists: a page's cursor must name one. */
    exists: `select 1 from ${s}.charges where id = $1::uuid`,
    /**
     * The outcome of the request's own call ($5 the charge's id), unless reconciliation settled it
     * first, and then its message ($6 to $12), in one statement and one commit: the charge as it
     * now stands, or no row (and no message).
     */
    settle: `with e as (
        update ${s}.effects set state = $2, result = $3::jsonb, error = $4, updated_at = now(), state_since = case when state = $2 then state_since else now() end
        where key = $1 and state in ('reserved', 'uncertain') returning state, result, error, checks, updated_at, state_since),
      ${outboxWriteCtes(o, 'e', 6)}
      select ${CHARGE_COLUMNS('c', 'e')} from e, ${s}.charges c where c.id = $5`,
    /** An ambiguous failure: PENDING stays, for reconciliation. */
    ambiguous: `update ${s}.effects set state = 'uncertain', error = $2, updated_at = now(), state_since = now() where key = $1 and state = 'reserved'`,
    /** PENDING charges older than the deadline ($1 ms): money in an unknown place. */
    stale: `select count(*)::int as count, coalesce(extract(epoch from now() - min(reserved_at)), 0)::float8 as oldest_seconds
      from ${s}.effects where effect_type = '${CAPTURE_EFFECT}' and state in ('reserved', 'uncertain')
        and reserved_at < now() - $1 * interval '1 millisecond'`,
    countsByStatus: `select ${status('e')} as status, count(*)::int as count from ${s}.effects e
      where e.effect_type = '${CAPTURE_EFFECT}' group by 1`,
  };
}
