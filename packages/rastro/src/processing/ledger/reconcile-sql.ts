import { runnerIsGone } from '../sql.js';

/** The reconciler's statements on the effect ledger, for one schema (quoted). */
export function reconcileSql(s: string) {
  return {
    /**
     * Claims up to $5 unsettled effects of the types $2 (with their settle times $3 and leases $4,
     * in ms) for the reconciler with token $1: uncertain ones, and reservations abandoned by a
     * dead owner or past their lease, once a call can no longer be on its way (settle), when
     * their backoff is over and no live reconciler holds them. SKIP LOCKED: two reconcilers at
     * once take different rows; the claim (checked_by) keeps them apart after the commit. A claim
     * is not a question: `checks` grows when an answer is recorded (settle, later), so a
     * reconciler that dies with rows claimed and unasked leaves their count, and backoff, alone.
     */
    // The rows are picked once (a materialized CTE), then claimed: a subquery the planner could
    // evaluate again might pick, and skip, other rows the second time.
    claim: `with picked as materialized (
        select f.key, f.reserved_at < now() - t.review_ms * interval '1 millisecond' as past_deadline
          from ${s}.effects f
          join unnest($2::text[], $3::float8[], $4::float8[], $6::float8[]) as t(effect_type, settle_ms, lease_ms, review_ms)
            on t.effect_type = f.effect_type
         where f.state in ('reserved', 'uncertain')
           and f.reserved_at < now() - t.settle_ms * interval '1 millisecond'
           and (f.state = 'uncertain' or f.reserved_at < now() - t.lease_ms * interval '1 millisecond' or ${runnerIsGone('f.owner_token')})
           and (f.check_after is null or f.check_after <= now())
           and (f.checked_by is null or f.checked_by = $1 or ${runnerIsGone('f.checked_by')})
         order by coalesce(f.check_after, f.reserved_at), f.key
         limit $5
         for update of f skip locked
      )
      update ${s}.effects e set checked_by = $1, updated_at = now()
        from picked
       where e.key = picked.key
      returning e.key, e.event_id, e.effect_type, e.state, e.reserved_at, e.checks, e.error, picked.past_deadline`,
    /** Settles a claimed effect ($3 done | failed | needs-review) if nothing settled it meanwhile. */
    settle: `update ${s}.effects set state = $3, result = $4::jsonb, error = $5, checks = checks + 1, checked_by = null, check_after = null, updated_at = now(), state_since = now()
      where key = $1 and checked_by = $2 and state in ('reserved', 'uncertain')
      returning key, event_id, effect_type, state, result, error`,
    /** "Did not happen", under `release`: the next run that reaches the event performs it. */
    release: `delete from ${s}.effects where key = $1 and checked_by = $2 and state in ('reserved', 'uncertain') returning key`,
    /**
     * "Unknown": asked again after $4 ms (the backoff), but no later than just past the business
     * deadline ($5 ms from the reservation), where the deadline rule decides, and never before $6 ms.
     */
    later: `update ${s}.effects set state = 'uncertain', error = $3, checks = checks + 1, checked_by = null, updated_at = now(),
             check_after = greatest(now() + $6 * interval '1 millisecond',
               least(now() + $4 * interval '1 millisecond', reserved_at + ($5::float8 + 1) * interval '1 millisecond')),
             state_since = case when state = 'uncertain' then state_since else now() end
      where key = $1 and checked_by = $2 and state in ('reserved', 'uncertain') returning key`,
    /**
     * Before a redo: the reconciler owns the reservation, and nobody asks again before the redo's
     * call can no longer be on its way ($3 ms), even if the reconciler dies mid-call.
     */
    redo: `update ${s}.effects set state = 'reserved', owner_token = $2, run_id = 'reconcile', error = null,
             check_after = now() + $3 * interval '1 millisecond', updated_at = now(), state_since = case when state = 'reserved' then state_since else now() end
      where key = $1 and checked_by = $2 and state in ('reserved', 'uncertain') returning key`,
  };
}

export type ReconcileSql = ReturnType<typeof reconcileSql>;
