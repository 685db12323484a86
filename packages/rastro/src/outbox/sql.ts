import { eventFrontierSql, frontierSql } from '../store/sql.js';

/** A row's partition among `count` (an expression), the same hash the processors' partitions use. */
export function partitionOf(key: string, count: string): string {
  return `mod(hashtext(${key})::bigint + 2147483648, ${count})`;
}

/** An outbox row's aggregate key: `<aggregate type>:<aggregate id>` (types have no colon). */
export const AGGREGATE_KEY = `(o.aggregate_type || ':' || o.aggregate_id)`;

/**
 * A relay message as one JSON array per row (one value to decode): position, tx_order, id,
 * aggregate type, aggregate id, type, payload, headers, traceparent, created/occurred at as
 * epoch milliseconds, aggregate key, partition.
 */
const outboxRowJson = (partitions: string) => `json_build_array(o.position, o.tx_order, o.id, o.aggregate_type, o.aggregate_id, o.type, o.payload,
      o.headers, o.traceparent, floor(extract(epoch from o.created_at) * 1000), ${AGGREGATE_KEY}, ${partitions})::text as message`;

/** The outbox relay runs and their partition counts, as a CTE body. */
export const relaysSql = (s: string) => `select run_id, partitions from ${s}.processor_runs where mode = 'relay' and source = 'outbox' and partitions is not null`;

/** Message `o` is behind the checkpoint of its partition in every relay run of `relays`, and parked in none. */
export const publishedByEveryRelay = (s: string) => `not exists (select 1 from relays r where not exists (
            select 1 from ${s}.processor_checkpoints c
            where c.run_id = r.run_id and c.partition = ${partitionOf(AGGREGATE_KEY, 'r.partitions')}
              and (o.tx_order, o.position) <= (c.tx_order, c.position)))
          and not exists (select 1 from ${s}.parked_events p join relays r on r.run_id = p.run_id
            where p.position = o.position and p.event_id = o.id)`;

/**
 * `write` as two CTEs of a caller's statement, `outbox_aggregate` and `outbox_message`: the
 * message is written only when `from` (a CTE of that statement) has a row, so it commits with the
 * caller's rows in one statement. The message's values, as `outboxMessageValues` returns
 * them, are the parameters `$first` to `$first + 6`.
 */
export function outboxWriteCtes(s: string, from: string, first: number): string {
  const p = (i: number) => `$${first + i}`;
  const txOrderNow = `pg_current_xact_id()::text::bigint + (select tx_order_offset from ${s}.store_settings)`;
  return `outbox_aggregate as (
        insert into ${s}.outbox_aggregates as a (aggregate_type, aggregate_id, tx_order)
        select ${p(0)}, ${p(1)}, ${txOrderNow} from ${from}
        on conflict (aggregate_type, aggregate_id) do update set tx_order = greatest(a.tx_order, excluded.tx_order)
        returning tx_order),
      outbox_message as (
        insert into ${s}.outbox (tx_order, id, aggregate_type, aggregate_id, type, payload, headers, traceparent)
        select outbox_aggregate.tx_order, ${p(2)}, ${p(0)}, ${p(1)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)} from outbox_aggregate
        returning position)`;
}

/** The outbox's statements for one schema (`s` validated and quoted). */
export function outboxSql(s: string) {
  const txOrderNow = `pg_current_xact_id()::text::bigint + (select tx_order_offset from ${s}.store_settings)`;
  return {
    /**
     * One message, ordered behind the aggregate's earlier writers: the aggregate row is their
     * lock, and its tx_order is raised so the relay's order never reverses their commits.
     * $1 type, $2 id of the aggregate; $3 message id, $4 type, $5 payload, $6 headers, $7 traceparent.
     */
    write: `with aggregate as (
        insert into ${s}.outbox_aggregates as a (aggregate_type, aggregate_id, tx_order)
        values ($1, $2, ${txOrderNow})
        on conflict (aggregate_type, aggregate_id) do update set tx_order = greatest(a.tx_order, excluded.tx_order)
        returning tx_order)
      insert into ${s}.outbox (tx_order, id, aggregate_type, aggregate_id, type, payload, headers, traceparent)
      select aggregate.tx_order, $3, $1, $2, $4, $5, $6, $7 from aggregate
      returning position`,

    /** The next messages of partitions $5 (of $4) after ($1, $2), below the frontier: the store's no-skip rule. */
    readBatch: `select ${outboxRowJson(`case when $5::int[] is null then 0 else ${partitionOf(AGGREGATE_KEY, '$4')}::int end`)}
      from ${s}.outbox o
      where (o.tx_order, o.position) > ($1, $2)
        and o.tx_order < ${eventFrontierSql(s)}
        and ($5::int[] is null or ${partitionOf(AGGREGATE_KEY, '$4')} = any($5::int[]))
      order by o.tx_order, o.position
      limit $3`,
    /** Messages by position ($1), as the relay reads them: for retrying parked ones. */
    byPositions: `select ${outboxRowJson('0')} from ${s}.outbox o where o.position = any($1::bigint[]) order by o.tx_order, o.position`,

    /**
     * Pending messages of relay run $1 ($2 partitions): after its checkpoint in their partition,
     * or parked. Read from the run's lowest checkpoint on, so it costs what is pending, not the
     * retained history.
     */
    pending: `with cp as (
        select partition, tx_order, position from ${s}.processor_checkpoints where run_id = $1),
      low as (
        select case when (select count(*) from cp) < $2 then 0 else (select min(tx_order) from cp) end as tx_order),
      unpublished as (
        select o.created_at from ${s}.outbox o
        left join cp on cp.partition = ${partitionOf(AGGREGATE_KEY, '$2')}
        where o.tx_order >= (select tx_order from low)
          and (cp.partition is null or (o.tx_order, o.position) > (cp.tx_order, cp.position))
        union all
        select o.created_at from ${s}.parked_events p join ${s}.outbox o on o.position = p.position and o.id = p.event_id
        where p.run_id = $1)
      select count(*)::bigint as pending, floor(extract(epoch from now() - min(created_at)) * 1000)::bigint as lag_ms from unpublished`,

    /**
     * Deletes up to $2 messages older than $1 days that every outbox relay run has published.
     * Never deletes when no relay has run.
     */
    deletePublished: `with relays as (${relaysSql(s)}),
      doomed as (
        select o.position, o.created_at from ${s}.outbox o
        where o.created_at < now() - $1 * interval '1 day' and exists (select 1 from relays) and ${publishedByEveryRelay(s)}
        order by o.created_at
        limit $2)
      delete from ${s}.outbox o using doomed d where o.position = d.position and o.created_at = d.created_at`,
    /** Whether the outbox table `table` (a daily partition) holds a message some relay has not published. */
    holdsUnpublished: (table: string) => `with relays as (${relaysSql(s)})
      select not exists (select 1 from relays) or exists (select 1 from ${table} o where not (${publishedByEveryRelay(s)})) as unpublished`,
    /**
     * Aggregate rows below the frontier order nothing any more: every running or future writer's
     * id is above them. The condition is repeated outside the subquery so that a row a writer
     * raised meanwhile is checked again at its new value, and kept.
     */
    deleteSettledAggregates: `delete from ${s}.outbox_aggregates
      where ctid = any(array(select ctid from ${s}.outbox_aggregates where tx_order < ${frontierSql(s)} limit $1))
        and tx_order < ${frontierSql(s)}`,
  } as const;
}

export type OutboxSql = ReturnType<typeof outboxSql>;
