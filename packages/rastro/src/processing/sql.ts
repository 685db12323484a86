import { eventFrontierSql } from '../store/sql.js';

/** Advisory-lock class ids: runner liveness tokens, and partition leases of live runs. */
export const RUNNER_LOCK_CLASS = 1918989172;
export const PARTITION_LOCK_CLASS = 1918989173;

/** True when no session holds the liveness lock of the runner with this token: the runner is dead. */
export function runnerIsGone(token: string): string {
  return `not exists (select 1 from pg_locks l where l.locktype = 'advisory' and l.classid = ${RUNNER_LOCK_CLASS}::oid
    and l.objid = (${token})::oid and l.objsubid = 2 and l.granted)`;
}

/**
 * Whether a run (`r`, a processor_runs row) has a runner alive now, exactly: a replay, when the
 * lock of the runner session it recorded is held; a live run or a relay, when one of its group's
 * runners holds its lock (a live run's group is its processor, a relay's its run id).
 */
function runAlive(s: string, r: string): string {
  return `case when ${r}.mode = 'replay' then (${r}.runner_token is not null and not ${runnerIsGone(`${r}.runner_token`)})
      or exists (select 1 from ${s}.processor_runners x where x.processor = 'replay:' || ${r}.run_id and not ${runnerIsGone('x.runner_token')})
    else exists (select 1 from ${s}.processor_runners x
      where x.processor = case when ${r}.mode = 'relay' then ${r}.run_id else ${r}.processor end and not ${runnerIsGone('x.runner_token')}) end`;
}

/**
 * The run row of a runner group (`$1`: a processor's name for its live run, `relay:<name>` for a
 * relay, `replay:<run id>` for the runners sharing a replay).
 */
const groupRun = `((run_id in ($1, 'live:' || $1) and mode in ('live', 'relay')) or (mode = 'replay' and 'replay:' || run_id = $1))`;

/**
 * A reservation another run may take over (`row` the existing entry, `onFailure` the new run's
 * rule): only under `release`, and only when its lease ($7 ms) ran out or its owner is dead.
 */
function takeable(row: string, onFailure: string): string {
  return `${row}.state = 'reserved' and ${onFailure} = 'release'
          and (${row}.reserved_at < now() - $7 * interval '1 millisecond' or ${runnerIsGone(`${row}.owner_token`)})`;
}

/**
 * A timestamp as whole epoch microseconds, exactly. extract() answers in numeric, whose arithmetic
 * costs about twice date_part's float8 on a batch's timestamps. The float is exact enough from
 * 1970 to 2038: below 2^31 seconds, its rounding errors (the division into seconds, the
 * multiplication back) add up to less than a quarter of a microsecond, so rounding finds the
 * integer. Other timestamps take extract's numeric.
 */
const epochMicros = (column: string) => `case when ${column} >= '1970-01-01Z' and ${column} < '2038-01-01Z'
    then round(date_part('epoch', ${column}) * 1000000)::bigint else (extract(epoch from ${column}) * 1000000)::bigint end`;

/** A timestamp as whole epoch milliseconds (a Date's precision), exactly ({@link epochMicros}). */
const epochMillis = (column: string) => `case when ${column} >= '1970-01-01Z' and ${column} < '2038-01-01Z'
    then round(date_part('epoch', ${column}) * 1000000)::bigint / 1000 else floor(extract(epoch from ${column}) * 1000)::bigint end`;

/**
 * The items of a JSON array, comma-separated, without its brackets (null when there are none):
 * the reader adds them ({@link parseJsonItems}), where `'[' || … || ']'` would copy the whole
 * text twice more on the server.
 */
const jsonItems = (item: string) => `string_agg(${item}, ',')`;

/**
 * A batch of events as a run reads them (`e`, the rows of a CTE) in one statement, one row:
 * - `events`, the whole batch as one JSON array (one value to decode instead of a row per event):
 *   per event an array of position, tx_order, stream_id, stream_version, id, type (its index in
 *   `handled`, or the type itself when it is not there), data, metadata, occurred_at and
 *   recorded_at as epoch milliseconds, `partition` and `schema_version`. In the CTE's order, which the decoder
 *   checks: an ORDER BY in the aggregate would sort the batch again.
 * - `n`, the number of events, which the decoder checks too.
 * - `ledger`, the events' effect ledger entries for the effect types in `types` as a JSON array of
 *   [event position, index of the effect type in `types`, state], read in the same snapshot: a
 *   position is shorter than an event id, and every entry of an event has its event's (migration
 *   0016). One found by event id without a position has its event id instead.
 *
 * The JSON is built as text with concat_ws: json_build_array looks up every argument's type on
 * every call, and a chain of `||` copies the growing text at every step; either cost more than
 * reading the rows. concat_ws skips NULLs, so every column in it is NOT NULL (or coalesced).
 * Strings that may need escaping go through to_json; uuids, numbers, jsonb and ledger states (a
 * fixed set of words) need none. Each array comes without its brackets ({@link jsonItems}), and
 * `b` is not materialized: each copy of a batch's text (a bracket added, a row stored in a CTE's
 * tuplestore) is a fresh allocation of a few hundred kB, and page faults on it, which measured a
 * fifth of the read's server time.
 *
 * Ledger entries are found by their event's position when the batch's positions are close
 * together (the usual case: one range scan of `effects_by_event_position`, where looking up a
 * thousand event ids costs a thousand index descents); the entries of other events in that range
 * come along and are never asked for. When they are spread (a filtered or shared run reading a
 * small share of the log), by event id: `= any(array(…))` keeps that lookup on its index even when
 * the planner would rather scan. `extra` adds columns to `b`.
 */
function runEventsJson(s: string, handled: string, types: string, extra = ''): string {
  const ledgerRow = jsonItems(`concat_ws(',', '[' || coalesce(f.event_position::text, '"' || f.event_id || '"'), array_position(${types}, f.effect_type) - 1, '"' || f.state || '"]')`);
  return `b as not materialized (
        select ${jsonItems(`concat_ws(',', '[' || e.position, e.tx_order, to_json(e.stream_id), e.stream_version, '"' || e.id || '"',
            coalesce((array_position(${handled}, e.type) - 1)::text, to_json(e.type)::text), e.data, e.metadata,
            ${epochMillis('e.occurred_at')}, ${epochMillis('e.recorded_at')}, e.partition, e.schema_version || ']')`)} as events,
          count(*)::int as n, min(e.position) as lo, max(e.position) as hi, array_agg(e.id) as ids${extra}
        from e)
      select b.events, b.n,
        case when cardinality(${types}) = 0 then null
          when b.hi - b.lo < 4 * b.n then (select ${ledgerRow} from ${s}.effects f
            where f.event_position between b.lo and b.hi and f.effect_type = any(${types}))
          else (select ${ledgerRow} from ${s}.effects f
            where f.event_id = any(b.ids) and f.effect_type = any(${types})) end as ledger`;
}

/**
 * Stored projection rows (`p`) as the items of one JSON array ({@link jsonItems}), each row
 * `[<which>, doc, version, observed_at in epoch microseconds]`: the probe names a row by its place
 * in the request, a read by projection and key.
 */
const storedRows = (which: string) => jsonItems(`concat_ws(',', '[' || ${which}, p.doc, coalesce(p.version::text, 'null'),
  coalesce((${epochMicros('p.observed_at')})::text, 'null') || ']')`);

/** A diff row the run would add: nothing before, stored as JSON null (or SQL NULL). */
const diffNew = `before is null or before = 'null'::jsonb`;

/**
 * Processing statements for one schema (`s` validated and quoted). With `simulate`, a run's own
 * parking statements (park, blocked streams, unpark) use the simulate run's record of its
 * failures, `simulate_failures`, instead of the operational queue: a dry run parks nothing an
 * operator is asked to act on, and no figure or alert counts it.
 */
export function processingSql(s: string, options: { simulate?: boolean } = {}) {
  const parked = options.simulate ? `${s}.simulate_failures` : `${s}.parked_events`;
  /**
   * The next events for a run, with the store's no-skip rule. $1/$2 checkpoint, $3 limit,
   * $4 types, $5/$6 occurredAt window, $7/$8 position range, $9 partition count, $10 partitions.
   */
  const runEventsWhere = `(e.tx_order, e.position) > ($1, $2)
        and e.type = any($4::text[])
        and ($5::timestamptz is null or e.occurred_at >= $5)
        and ($6::timestamptz is null or e.occurred_at < $6)
        and ($7::bigint is null or e.position >= $7)
        and ($8::bigint is null or e.position <= $8)
        and ($10::int[] is null or mod(hashtext(e.stream_id)::bigint + 2147483648, $9) = any($10::int[]))`;
  const nextEvents = `from ${s}.events e
      where ${runEventsWhere} and e.tx_order < (select frontier from fr)
      order by e.tx_order, e.position
      limit $3 offset $13`;
  return {
    /**
     * A run's next events ({@link nextEvents}) with their ledger entries for effect types $11
     * ({@link runEventsJson}), and the streams with parked events of run $12 (few: all of them
     * rather than a lookup per stream of the batch), in one statement and one snapshot. The
     * frontier is taken once (`fr`): the read returns the one it read below, and whether events
     * of the range wait at or above it (`held`). $13 events are skipped first (a read ahead).
     * With projections in $14 (a replay, once its handlers wrote to them), the rows of those its
     * events wrote last (`stored`), as the probe would answer them.
     */
    readBatch: `with fr as materialized (select ${eventFrontierSql(s)} as frontier),
      e as (
        select e.*, case when $10::int[] is null then 0 else mod(hashtext(e.stream_id)::bigint + 2147483648, $9)::int end as partition
        ${nextEvents}),
      ${runEventsJson(s, '$4::text[]', '$11::text[]', `,
          -- A read of some partitions keeps the stored rows of its events only (\`stored\`).
          array_agg(e.position) filter (where $10::int[] is not null) as positions`)},
        array(select distinct p.stream_id from ${s}.parked_events p where p.run_id = $12) as blocked,
        -- Committed events of the run held back behind a transaction still open: read again soon.
        -- Asked only when the read is short of its limit: a full batch is followed by another read.
        case when b.n < $3
          then exists (select 1 from ${s}.events e where ${runEventsWhere} and e.tx_order >= (select frontier from fr)) else false end as held,
        (select frontier from fr) as frontier,
        -- The rows of projections $14 the batch's events wrote last, when its positions are close:
        -- one range scan. A read of some partitions (\$10) finds other partitions' events in its
        -- range, and their rows, which their runners may be writing: it keeps only its events' rows,
        -- merging the range scan with its positions. Its positions come by subscript, not unnest:
        -- the planner counts 10 items in an array it cannot see, and would look each row up by
        -- itself, a descent of the index per event; generate_series it counts at 1,000.
        case when cardinality($14::text[]) > 0 and b.hi - b.lo < 4 * b.n then
          case when $10::int[] is null then (select ${storedRows(`to_json(p.projection), to_json(p.key)`)} from ${s}.projections p
              where p.event_position between b.lo and b.hi and p.projection = any($14::text[]))
            else (select ${storedRows(`to_json(p.projection), to_json(p.key)`)} from generate_series(1, b.n) u(i)
              join ${s}.projections p on p.event_position = b.positions[u.i]
              where p.event_position between b.lo and b.hi and p.projection = any($14::text[])) end end as stored
      from b`,
    /**
     * Whether the range has events after the checkpoint ($6, $7): held back by an open
     * transaction, or committed since the last read saw the frontier. A run ends only when there
     * are none: "nothing below the frontier" alone is no proof, since the frontier may have moved
     * between the read and this check.
     */
    remainingAfter: `select exists (select 1 from ${s}.events
      where (tx_order > $6 or (tx_order = $6 and position > $7)) and type = any($1::text[])
        and ($2::timestamptz is null or occurred_at >= $2) and ($3::timestamptz is null or occurred_at < $3)
        and ($4::bigint is null or position >= $4) and ($5::bigint is null or position <= $5)) as remaining`,
    countRange: `select count(*)::bigint as n from ${s}.events
      where type = any($1::text[])
        and ($2::timestamptz is null or occurred_at >= $2) and ($3::timestamptz is null or occurred_at < $3)
        and ($4::bigint is null or position >= $4) and ($5::bigint is null or position <= $5)`,
    /** Events by id ($1), in log order, as a run reads them, with their ledger entries for effect types $2. */
    eventsByIds: `with e as (select e.*, 0 as partition from ${s}.events e where e.id = any($1::uuid[]) order by e.tx_order, e.position),
      ${runEventsJson(s, '$3::text[]', '$2::text[]')} from b`,

    /** Registers a run or finds it again; $11 what it reads (relays), $12 its partition count (live runs and relays). */
    startRun: `insert into ${s}.processor_runs (run_id, processor, mode, simulate, policy, window_from, window_to, from_position, to_position, total_events, source, partitions)
      values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) -- heartbeat_at: see registerRunner
      on conflict (run_id) do update set updated_at = now(), policy = excluded.policy, source = excluded.source, heartbeat_at = now(), stopped_at = null,
        partitions = coalesce(${s}.processor_runs.partitions, excluded.partitions),
        status = case when ${s}.processor_runs.status = 'completed' then 'completed' else 'running' end
      returning processor, mode, simulate, window_from, window_to, from_position, to_position, status, partitions`,
    getRun: `select run_id, processor, mode, simulate, policy, window_from, window_to, from_position, to_position, total_events, status, started_at, updated_at, source, partitions,
        heartbeat_at, stopped_at, ${runAlive(s, 'r')} as alive
      from ${s}.processor_runs r where run_id = $1`,
    /** A replay's runner session ($2): the run is alive while its lock is held. */
    holdRun: `update ${s}.processor_runs set runner_token = $2, heartbeat_at = now(), stopped_at = null where run_id = $1`,
    /** A replay's sign of life, while it is the one holding the run. */
    runHeartbeat: `update ${s}.processor_runs set heartbeat_at = now() where run_id = $1 and runner_token = $2`,
    /** A replay ended (completed, failed or stopped) with its process alive: it stopped, it did not die. */
    runStopped: `update ${s}.processor_runs set heartbeat_at = now(), stopped_at = now() where run_id = $1 and runner_token = $2`,
    completeRun: `update ${s}.processor_runs set status = 'completed', updated_at = now() where run_id = $1`,
    checkpoints: `select partition, tx_order, position from ${s}.processor_checkpoints where run_id = $1 and partition = any($2::int[])`,
    /**
     * A batch's bookkeeping in one statement: adds to the run's counters ($2 names, $3 values)
     * and moves the checkpoints of partitions $4 forward to ($5, $6), never back.
     */
    saveProgress: `with counted as (
        insert into ${s}.run_counters (run_id, name, value) select $1, unnest($2::text[]), unnest($3::bigint[])
        on conflict (run_id, name) do update set value = ${s}.run_counters.value + excluded.value)
      insert into ${s}.processor_checkpoints (run_id, partition, tx_order, position)
      select $1, unnest($4::int[]), $5, $6
      on conflict (run_id, partition) do update set tx_order = excluded.tx_order, position = excluded.position, updated_at = now()
      where (${s}.processor_checkpoints.tx_order, ${s}.processor_checkpoints.position) < (excluded.tx_order, excluded.position)`,
    /**
     * {@link saveProgress} for partitions a runner holds as session locks ($7 their lock name, $8
     * the pid of the session holding them): first takes each partition's commit hold ($9, shared,
     * until the transaction ends), then saves only if that session still holds every partition in
     * $4. Returns `held`: false when it saved nothing because a partition was lost. A runner that
     * takes a partition over waits for the commit holds first ({@link waitForPartitionCommits}), so
     * no commit of the previous holder lands after it read the partition's checkpoint.
     */
    saveHeldProgress: `with hold as materialized (
        select count(pg_advisory_xact_lock_shared(hashtext($9), p)) as n from unnest($4::int[]) p
      ), owned as materialized (
        select case when (select n from hold) is null then false
          else (select count(*) from pg_locks l where l.locktype = 'advisory' and l.classid = hashtext($7)::oid and l.objsubid = 2
                  and l.granted and l.pid = $8 and l.objid = any($4::int[]::oid[])) = cardinality($4::int[]) end as held
      ), counted as (
        insert into ${s}.run_counters (run_id, name, value) select $1, c.name, c.value from unnest($2::text[], $3::bigint[]) as c(name, value), owned
        where owned.held
        on conflict (run_id, name) do update set value = ${s}.run_counters.value + excluded.value
      ), moved as (
        insert into ${s}.processor_checkpoints (run_id, partition, tx_order, position)
        select $1, p, $5, $6 from unnest($4::int[]) p, owned where owned.held
        on conflict (run_id, partition) do update set tx_order = excluded.tx_order, position = excluded.position, updated_at = now()
        where (${s}.processor_checkpoints.tx_order, ${s}.processor_checkpoints.position) < (excluded.tx_order, excluded.position)
      )
      select held from owned`,
    /** Waits until no commit of partitions $2 (commit hold $1) is in flight: the statement takes and drops each hold. */
    waitForPartitionCommits: `select count(pg_advisory_xact_lock(hashtext($1), p))::int as waited from unnest($2::int[]) p`,
    /**
     * Partitions among $6 (of $8) whose checkpoint in run $7 has events of the range after it:
     * held back by an open transaction or not handled yet. The run ends when none is left. $9,
     * per partition, a tx_order below which it is known to have none left (the frontier of a read
     * that found none), or null.
     */
    partitionsLeft: `select c.partition from (
        -- Where p.since is past the checkpoint, start just before it: (since - 1, the largest
        -- position). A separate tx_order >= since would not move the index scan's start.
        select p.partition, greatest(coalesce(k.tx_order, 0), p.since - 1) as tx_order,
          case when coalesce(k.tx_order, 0) < p.since then 9223372036854775807 else coalesce(k.position, 0) end as position
          from unnest($6::int[], $9::bigint[]) as p(partition, since)
          left join ${s}.processor_checkpoints k on k.run_id = $7 and k.partition = p.partition) c
      -- Per partition, the first event after its checkpoint (or after what it is known to have
      -- handled): an index scan that stops at once where one is left, where a semi-join would
      -- hash the whole range at every check.
      cross join lateral (select 1 from ${s}.events e
        where (e.tx_order, e.position) > (c.tx_order, c.position) and e.type = any($1::text[])
          and ($2::timestamptz is null or e.occurred_at >= $2) and ($3::timestamptz is null or e.occurred_at < $3)
          and ($4::bigint is null or e.position >= $4) and ($5::bigint is null or e.position <= $5)
          and mod(hashtext(e.stream_id)::bigint + 2147483648, $8) = c.partition
        order by e.tx_order, e.position limit 1) x
      order by 1`,
    counters: `select name, value from ${s}.run_counters where run_id = $1 order by name`,

    /**
     * Current rows for the keys a batch writes ($1 a JSON array of [projection, key]), as one JSON
     * array of [i, doc, version, observed_at as epoch microseconds], `i` 1-based into the keys; text
     * built as {@link runEventsJson} builds it. The keys come as JSON rather than as arrays: the
     * planner counts a JSON array's elements as 100 and looks each one up in the primary key; given
     * an array's true size (1,000) it may rather hash the whole projection, which measured ten
     * times slower on a projection of 100,000 rows. One `key = any(…)` per projection instead
     * measured 40% less work on a projection of 100,000 rows, but on one of a few thousand the
     * planner puts the array in a join filter or a sequential scan: 20 to 500 ms a probe, where
     * this join takes 2 to 4 ms on every size.
     */
    probe: `select ${storedRows('k.i')} as rows
      from json_array_elements($1::json) with ordinality as k(pair, i)
      join ${s}.projections p on p.projection = k.pair->>0 and p.key = k.pair->>1`,
    /**
     * Guarded upsert of many rows; returns the rows that applied. A row with a version is
     * version-guarded; one without is recency-guarded: it applies when either observation is null
     * or the stored one is not in a later second, and a null observation keeps the stored one.
     */
    upsert: `insert into ${s}.projections (projection, key, doc, version, observed_at, event_id, event_position)
      select * from unnest($1::text[], $2::text[], $3::jsonb[], $4::bigint[], $5::timestamptz[], $6::uuid[], $7::bigint[])
      -- One lock order for every runner: a live run and a replay writing the same rows queue.
      order by 1, 2
      on conflict (projection, key) do update
        set doc = excluded.doc, version = excluded.version, event_id = excluded.event_id, event_position = excluded.event_position, updated_at = now(),
            observed_at = case when excluded.version is null then coalesce(excluded.observed_at, ${s}.projections.observed_at) else excluded.observed_at end
        where (excluded.version is not null and (${s}.projections.version is null or ${s}.projections.version <= excluded.version))
           or (excluded.version is null and (excluded.observed_at is null or ${s}.projections.observed_at is null
               or date_trunc('second', ${s}.projections.observed_at) <= date_trunc('second', excluded.observed_at)))
      returning projection, key`,
    saveDiffs: `insert into ${s}.replay_diffs (run_id, projection, key, before, after)
      select $1, * from unnest($2::text[], $3::text[], $4::jsonb[], $5::jsonb[])
      on conflict (run_id, projection, key) do update set after = excluded.after`,
    diffs: `select projection, key, before, after from ${s}.replay_diffs where run_id = $1 order by projection, key`,
    /** One page of a run's diff: $2 projection (null: all), $3 text in the key (null: any), $4 limit, $5 offset. */
    diffPage: `select projection, key, before, after, count(*) over ()::bigint as matching from ${s}.replay_diffs
      where run_id = $1 and ($2::text is null or projection = $2) and ($3::text is null or strpos(key, $3) > 0)
      order by projection, key limit $4 offset $5`,
    /** A run's diff totals per projection: keys it would add (no row before) and keys it would change. */
    // A key with no row before is stored as JSON null (an SQL NULL would do too): both are new.
    diffTotals: `select projection, count(*) filter (where ${diffNew})::bigint as added, count(*) filter (where not (${diffNew}))::bigint as changed
      from ${s}.replay_diffs where run_id = $1 group by projection order by projection`,
    /** Runs of mode $1 (null: live and replay), newest first. */
    listRuns: `select run_id, processor, mode, simulate, window_from, window_to, from_position, to_position, total_events, status, started_at, updated_at, partitions,
        heartbeat_at, stopped_at, ${runAlive(s, 'r')} as alive
      from ${s}.processor_runs r where ($1::text is null and mode in ('live', 'replay')) or mode = $1 order by started_at desc, run_id limit $2`,
    /** Relay runs with their liveness, by name. */
    listRelayRuns: `select run_id, processor, source, partitions, status, updated_at, heartbeat_at, stopped_at, ${runAlive(s, 'r')} as alive
      from ${s}.processor_runs r where mode = 'relay' order by run_id`,
    /**
     * The partitions of replay runs $1 (schema name $2): each one's checkpoint and the runner
     * holding it now (its backend's pid, runner token and client), from the partition locks.
     */
    replayPartitions: `select r.run_id, p.partition::int as partition, c.position, c.updated_at, h.pid, h.token, h.client
      from ${s}.processor_runs r
      cross join lateral generate_series(0, coalesce(r.partitions, 1) - 1) p(partition)
      left join ${s}.processor_checkpoints c on c.run_id = r.run_id and c.partition = p.partition
      left join lateral (
        select l.pid,
          (select t.objid::bigint from pg_locks t where t.pid = l.pid and t.locktype = 'advisory' and t.classid = ${RUNNER_LOCK_CLASS}::oid
             and t.objsubid = 2 and t.granted limit 1) as token,
          (select nullif(a.application_name, '') from pg_stat_activity a where a.pid = l.pid) as client
        from pg_locks l where l.locktype = 'advisory' and l.granted and l.objsubid = 2
          and l.classid = hashtext('rastro.partition:' || $2 || ':replay:' || r.run_id)::oid and l.objid = p.partition::oid
        limit 1) h on true
      where r.run_id = any($1::text[]) and r.mode = 'replay'
      order by r.run_id, p.partition`,
    /** Counters of the runs in $1, one row per run and counter. */
    countersOfRuns: `select run_id, name, value from ${s}.run_counters where run_id = any($1::text[])`,

    /**
     * Reserves effects; returns the keys this call reserved. An existing reservation is taken
     * over only under `release` and only when its lease ran out or its owner's lock is gone.
     */
    reserve: `insert into ${s}.effects (key, event_id, effect_type, state, run_id, on_failure, owner_token, event_position)
      select k.key, k.event_id, k.effect_type, 'reserved', $5, k.on_failure, $6, k.event_position
        from unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $8::bigint[]) as k(key, event_id, effect_type, on_failure, event_position)
       -- Only keys with no entry, or with one this run may take over. A conflict locks the existing
       -- row even when the update then declines: it would lock (and write) settled rows, and wait
       -- on, even deadlock with, the transaction of a live owner recording its outcomes.
       where not exists (select 1 from ${s}.effects e where e.key = k.key and not (${takeable('e', 'k.on_failure')}))
       -- One lock order for every runner: two reservations racing for the same new keys queue.
       order by k.key
      on conflict (key) do update
        set run_id = excluded.run_id, owner_token = excluded.owner_token, event_position = excluded.event_position, on_failure = excluded.on_failure, reserved_at = now(), updated_at = now(), state_since = now()
        where ${takeable(`${s}.effects`, 'excluded.on_failure')}
      returning key`,
    completeEffects: `update ${s}.effects e set state = 'done', result = k.result, updated_at = now(), state_since = now()
      from unnest($1::text[], $2::jsonb[]) as k(key, result)
      where e.key = k.key and e.owner_token = $3 and e.state = 'reserved'`,
    markUncertain: `update ${s}.effects e set state = 'uncertain', error = k.error, updated_at = now(), state_since = now()
      from unnest($1::text[], $2::text[]) as k(key, error)
      where e.key = k.key and e.owner_token = $3 and e.state = 'reserved'`,
    release: `delete from ${s}.effects where key = $1 and owner_token = $2 and state = 'reserved'`,
    /**
     * Reservations whose owner is dead or whose lease ran out: keep → uncertain, release → deleted.
     * Effects made on a request's path (owner token 0, no runner) are left to reconciliation.
     */
    sweepKeep: `update ${s}.effects e set state = 'uncertain', error = 'reservation abandoned: the call may or may not have happened', updated_at = now(), state_since = now()
      where e.state = 'reserved' and e.on_failure = 'keep' and e.owner_token <> $2 and e.owner_token <> 0
        and (e.reserved_at < now() - $1 * interval '1 millisecond' or ${runnerIsGone('e.owner_token')})
      returning key`,
    sweepRelease: `delete from ${s}.effects e
      where e.state = 'reserved' and e.on_failure = 'release' and e.owner_token <> $2 and e.owner_token <> 0
        and (e.reserved_at < now() - $1 * interval '1 millisecond' or ${runnerIsGone('e.owner_token')})
      returning key`,
    /** Entries newest first: of state $1, of states $3, not of types $4 (each null: any). */
    listEffects: `select key, event_id, effect_type, state, run_id, on_failure, result, error, reserved_at, updated_at, state_since, checks, check_after
      from ${s}.effects where ($1::text is null or state = $1) and ($3::text[] is null or state = any($3::text[])) and ($4::text[] is null or effect_type <> all($4::text[]))
      order by updated_at desc limit $2`,
    /** How many entries are in states $1, of types $2 (null: any) and not of types $3 (null: none apart). */
    countEffects: `select count(*)::bigint as n from ${s}.effects
      where state = any($1::text[]) and ($2::text[] is null or effect_type = any($2::text[])) and ($3::text[] is null or effect_type <> all($3::text[]))`,
    // A person's confirmation is the outcome: a JSON null result, as for a call that returned nothing.
    resolveDone: `update ${s}.effects set state = 'done', result = coalesce(result, 'null'::jsonb), error = null, checked_by = null, check_after = null, updated_at = now(), state_since = now()
      where key = $1 and state in ('uncertain', 'needs-review') returning key, event_id, effect_type, state, result, error`,
    resolveFailed: `update ${s}.effects set state = 'failed', error = $2, checked_by = null, check_after = null, updated_at = now(), state_since = now()
      where key = $1 and state in ('uncertain', 'needs-review') returning key, event_id, effect_type, state, result, error`,
    /** Only an event's effect can be released: the next run that reaches the event performs it. */
    resolveRetry: `delete from ${s}.effects where key = $1 and state in ('uncertain', 'needs-review') and event_id is not null
      returning key, event_id, effect_type, state, result, error`,
    effectState: `select state, event_id from ${s}.effects where key = $1`,
    effectByKey: `select key, event_id, effect_type, state, run_id, on_failure, result, error, reserved_at, updated_at, state_since, checks, check_after from ${s}.effects where key = $1`,
    /** Ledger entries by state: the open ones on the effects_open index, done ones by count. */
    effectsByState: `select state, count(*)::bigint as n from ${s}.effects group by state`,
    /** Entries in one state ($1) by effect type, on the effects_open index: the review queue's size per provider. */
    effectsOfStateByType: `select effect_type, count(*)::bigint as n from ${s}.effects where state = $1 group by effect_type`,

    /** Streams with parked events: few, so all of them rather than a lookup per stream of the batch. */
    blockedStreams: `select distinct stream_id from ${parked} where run_id = $1`,
    parkMany: `insert into ${parked} (processor, run_id, event_id, stream_id, position, reason, error)
      select $1, $2, * from unnest($3::uuid[], $4::text[], $5::bigint[], $6::text[], $7::text[])
      on conflict (run_id, event_id) do update set reason = excluded.reason, error = excluded.error, parked_at = now()`,
    listParked: `select processor, run_id, event_id, stream_id, position, reason, error, parked_at from ${s}.parked_events
      where ($1::text is null or run_id = $1) order by run_id, stream_id, position limit $2`,
    parkedOfStream: `select event_id from ${parked} where run_id = $1 and stream_id = $2 order by position`,
    /** A simulate run's failures ($1), in log order, at most $2. */
    simulateFailures: `select processor, run_id, event_id, stream_id, position, reason, error, parked_at, count(*) over ()::bigint as total
      from ${s}.simulate_failures where run_id = $1 order by stream_id, position limit $2`,
    /** The parked entries of event $1 in processor runs (relays' parked messages apart), of run $2 only unless null. */
    parkedEvent: `select p.processor, p.run_id, p.stream_id from ${s}.parked_events p left join ${s}.processor_runs r on r.run_id = p.run_id
      where p.event_id = $1 and ($2::text is null or p.run_id = $2) and r.mode is distinct from 'relay' order by p.run_id`,
    /** Run $1, if it exists, and the live runs: what a run id given to look up parked events may be. */
    runIdsFor: `select run_id, mode from ${s}.processor_runs where run_id = $1 or mode = 'live' order by run_id`,
    /** The effect ledger's entries of events $1 made by any run of processor $2 (entries are keyed by event, not run). */
    effectsOfEvents: `select e.event_id, e.effect_type, e.state, e.run_id from ${s}.effects e join ${s}.processor_runs r on r.run_id = e.run_id
      where e.event_id = any($1::uuid[]) and r.processor = $2 order by e.event_id, e.effect_type`,
    /** Parked rows per processor, apart for relays (parked messages) and processors (parked events). */
    parkedCounts: `select p.processor, coalesce(r.mode = 'relay', false) as relay, count(*)::bigint as n from ${s}.parked_events p
      left join ${s}.processor_runs r on r.run_id = p.run_id group by 1, 2 order by 1`,
    /**
     * The hold on a run's parked stream ($1 `<schema>:<run id>`, $2 the streams, taken in one
     * order): a retry holds it for its whole run, a batch parking events behind a blocked stream
     * takes it first in its transaction, so the two never interleave. The check that the stream
     * is still parked is a statement of its own: it must see what committed while this one waited.
     */
    holdParkedStreams: `select count(pg_advisory_xact_lock(hashtext($1), hashtext(s.stream_id)))::int as held
      from (select distinct unnest($2::text[]) as stream_id order by 1) s`,
    releasedStreams: `select s.stream_id from unnest($2::text[]) as s(stream_id)
      where not exists (select 1 from ${parked} p where p.run_id = $1 and p.stream_id = s.stream_id)`,
    holdParkedStreamForRetry: `select pg_advisory_lock(hashtext($1), hashtext($2))`,
    releaseParkedStreamForRetry: `select pg_advisory_unlock(hashtext($1), hashtext($2))`,
    unparkMany: `delete from ${parked} where run_id = $1 and event_id = any($2::uuid[])`,

    lockRunner: `select pg_advisory_lock(${RUNNER_LOCK_CLASS}, $1)`,
    unlockRunner: `select pg_advisory_unlock(${RUNNER_LOCK_CLASS}, $1)`,
    tryLockPartition: `select pg_try_advisory_lock(hashtext($1), $2) as locked`,
    unlockPartition: `select pg_advisory_unlock(hashtext($1), $2)`,
    /** A runner of group $1 is alive: its row, and its run's heartbeat. */
    registerRunner: `with beat as (update ${s}.processor_runs set heartbeat_at = now(), stopped_at = null where ${groupRun} returning 1)
      insert into ${s}.processor_runners (processor, runner_token) values ($1, $2)
      on conflict (processor, runner_token) do update set heartbeat_at = now()`,
    /** Whether a live runner or a relay of this schema is running now (every group but replays' and the trail's sealer, whose work is background too). */
    liveTraffic: `select exists (select 1 from ${s}.processor_runners r
      where r.processor not like 'replay:%' and r.processor not like 'trail:%' and not ${runnerIsGone('r.runner_token')}) as live`,
    /** Runners of a processor whose liveness lock is held: exact, no heartbeat timeout to wait out. */
    liveRunners: `select count(*)::int as n from ${s}.processor_runners r
      where r.processor = $1 and not ${runnerIsGone('r.runner_token')}`,
    /** A runner of group $1 stopped cleanly: its run stopped, unless another runner still holds it (see runAlive). */
    forgetRunner: `with stop as (update ${s}.processor_runs set heartbeat_at = now(), stopped_at = now() where ${groupRun} returning 1)
      delete from ${s}.processor_runners where processor = $1 and runner_token = $2`,
    forgetDeadRunners: `delete from ${s}.processor_runners r
      where r.processor = $1 and ${runnerIsGone('r.runner_token')}`,
  } as const;
}

export type ProcessingSql = ReturnType<typeof processingSql>;
