import { EVENT_COLUMNS } from './event.js';

/**
 * The event store's statements for one schema. `s` is the schema, already validated and quoted.
 *
 * Appends are one statement each, so a single-event append costs one round trip and one
 * commit. The stream row is the lock that orders appends to one stream; `tx_order` is raised to
 * the stream's previous value so the global order never reverses a stream's versions.
 */
/** The oldest transaction running anywhere in the cluster, as a transaction order: nothing below it can still change. */
export function frontierSql(s: string): string {
  return `(select pg_snapshot_xmin(pg_current_snapshot())::text::bigint + tx_order_offset from ${s}.store_settings)`;
}

/**
 * Advisory-lock class of the mark a transaction takes to say it appends no events and writes no
 * outbox rows ({@link markAppendsNothing}), keyed by its own transaction id.
 */
export const APPENDS_NOTHING_LOCK_CLASS = 1918989174;

/** The advisory lock key (both halves) of the mark of the transaction whose id is `xid` (an xid8 expression). */
function markKey(xid: string): string {
  return `${APPENDS_NOTHING_LOCK_CLASS}, (${xid}::text::bigint & 2147483647)::int`;
}

/**
 * The mark, as a transaction's first statement: it takes the transaction's id and a lock keyed by
 * it (its low 31 bits: two transactions running at once are never 2^31 ids apart), held until the
 * transaction ends. Only a transaction that will not append an event or write an outbox row may
 * take it (a batch of handlers' writes: rows, ledger outcomes, checkpoints).
 */
export const markAppendsNothing = `select pg_advisory_xact_lock(${markKey('pg_current_xact_id()')})`;

/** Whether the running transaction whose id is `xid` holds {@link markAppendsNothing} (see {@link eventFrontierSql}). */
function holdsMark(xid: string): string {
  const key = markKey(xid);
  return `case when pg_try_advisory_lock_shared(${key}) then not pg_advisory_unlock_shared(${key}) else true end`;
}

/**
 * The lowest transaction order a reader of the log (or of the outbox, ordered the same way) must
 * not pass: the oldest running transaction that may still append, as {@link frontierSql} but
 * past transactions that hold {@link markAppendsNothing}. A processor's batch writing its rows
 * then holds no reader back.
 *
 * Whether a running transaction holds its mark is asked of the lock itself: a shared try of the
 * mark's key fails only while a transaction holds the mark, and when it succeeds the reader lets
 * go of it at once (a session lock, so no transaction of the reader's keeps it). Exact, with no
 * race: a transaction takes its mark after its id, so a reader that sees the id before the mark
 * waits for it, as it would for any transaction; the mark is held to the transaction's end; and
 * a mark keyed by an id is only ever taken by the transaction with that id. The reader's own
 * transaction, when it has an id, is not in its snapshot's list of running ones and bounds the
 * frontier as the snapshot's xmin does.
 */
export function eventFrontierSql(s: string): string {
  return `(select least(pg_current_xact_id_if_assigned(),
        (select min(x) from pg_snapshot_xip(c.snap) x where not ${holdsMark('x')}),
        pg_snapshot_xmax(c.snap))::text::bigint + (select tx_order_offset from ${s}.store_settings)
      from (select pg_current_snapshot() as snap) c)`;
}

export function eventStoreSql(s: string) {
  const txOrderNow = `pg_current_xact_id()::text::bigint + (select tx_order_offset from ${s}.store_settings)`;

  /** The links of the batch's events chained from `prev` (docs/trail.md), its first at version `first`. */
  const chain = (prev: string, first: string) =>
    `${s}.event_chain(${prev}, $1, ${first}, $2::uuid[], $3::text[], $4::jsonb[], $5::jsonb[], $6::timestamptz[], $8::int2[], now())`;
  /** The stream's new head: the last link of the batch. */
  const head = (prev: string, first: string) => `(${chain(prev, first)})[$7::bigint::int]`;

  /**
   * The append, with `stream` the stream row's CTE: it moves the stream's version and head under
   * the row's lock, and returns the head the batch chains from (`base`), so the events' links are
   * computed from what committed before them, however late this statement took the lock. `also`,
   * a caller's statement run in the same one (see `appendNew`). With `newStream`, the stream's row
   * is only inserted: its links chain from nothing, so they are computed once, in `from_start`,
   * before the row (whose head is the last of them) is written.
   */
  const appendWith = (streamCte: string, also?: string, newStream = false) => `
with input as (
  select * from unnest($2::uuid[], $3::text[], $4::jsonb[], $5::jsonb[], $6::timestamptz[], $8::int2[])
    with ordinality as input(id, type, data, metadata, occurred_at, schema_version, n)
), ${newStream ? `from_start as materialized (
  select ${chain('null', '1')} as links
), stream as (
  ${streamCte}
), chained as (
  select links from from_start
)` : `stream as (
  ${streamCte}
), chained as materialized (
  select ${chain('stream.base', 'stream.version - $7 + 1')} as links from stream
)`}, appended as (
  insert into ${s}.events (tx_order, stream_id, stream_version, id, type, data, metadata, occurred_at, recorded_at, schema_version, hash)
  select stream.tx_order, $1, stream.version - $7 + input.n, input.id, input.type, input.data, input.metadata, input.occurred_at, now(),
    input.schema_version, chained.links[input.n]
  from stream, chained, input
  order by input.n
  returning position
)${also === undefined ? '' : `, also as (
  ${also}
)`}
select (select version from stream) as stream_version,
       (select array_agg(position order by position) from appended) as positions,
       (select encode(head, 'hex') from stream) as head`;

  const moveStream = `version = s.version + $7, tx_order = greatest(s.tx_order, ${txOrderNow}), head = ${head('s.head', 's.version + 1')}, base = s.head`;

  /**
   * `appendWith` for one event, its columns as scalars ($2 to $6, $8; $7 = 1) rather than arrays.
   * Its link is the stream's new head, computed where the row's lock gives the previous one.
   */
  const appendOneWith = (streamCte: string, also?: string) => `
with stream as (
  ${streamCte}
), appended as (
  insert into ${s}.events (tx_order, stream_id, stream_version, id, type, data, metadata, occurred_at, recorded_at, schema_version, hash)
  select stream.tx_order, $1, stream.version, $2::uuid, $3::text, $4::jsonb, $5::jsonb, $6::timestamptz, now(), $8::int2, stream.head
  from stream
  returning position
)${also === undefined ? '' : `, also as (
  ${also}
)`}
select (select version from stream) as stream_version,
       (select array_agg(position) from appended) as positions,
       (select encode(head, 'hex') from stream) as head`;

  // As append.exact's.
  // $10, when given, the head the caller holds the stream at: the version alone does not tell
  // another history of the stream (a failover's lost tail, written again) from the one it read.
  const expectedHead = `($10::text is null or s.head = decode($10::text, 'hex'))`;
  const exactStream = `update ${s}.streams s
    set ${moveStream}
    where s.stream_id = $1 and s.version = $9 and ${expectedHead}
    returning version, tx_order, base, head`;
  const exactOneStream = `update ${s}.streams s
    set version = s.version + $7, tx_order = greatest(s.tx_order, ${txOrderNow}), base = s.head,
      head = ${s}.event_link(s.head, $2::uuid, $1, s.version + $7, $8::int2, $6::timestamptz, now(), $3::text, $4::jsonb, $5::jsonb)
    where s.stream_id = $1 and s.version = $9 and ${expectedHead}
    returning version, tx_order, base, head`;

  return {
    /**
     * The exact append of new events ($1 to $9 as `append.exact`, $10 the expected head or null;
     * with `one`, a single event's columns as scalars) and, in the same statement, `also`: an
     * INSERT or UPDATE of the caller's that selects from `stream` (one row, the stream's new
     * version, when the events were appended) with its own values from $11 on. One statement, one commit; when `also` fails (a
     * unique violation, say), the append is undone with it.
     */
    appendNew: (one: boolean, also?: string) => (one ? appendOneWith(exactOneStream, also) : appendWith(exactStream, also)),

    /** $1 stream, $2..$6 event columns, $7 batch size, $8 schema versions; $9 expected version (exact only). */
    append: {
      any: appendWith(`insert into ${s}.streams as s (stream_id, version, tx_order, head, base)
    values ($1, $7, ${txOrderNow}, ${head('null', '1')}, null)
    on conflict (stream_id) do update
      set version = s.version + excluded.version, tx_order = greatest(s.tx_order, excluded.tx_order), head = ${head('s.head', 's.version + 1')}, base = s.head
    returning version, tx_order, base, head`),
      noStream: appendWith(`insert into ${s}.streams (stream_id, version, tx_order, head, base)
    values ($1, $7, ${txOrderNow}, (select links[$7::bigint::int] from from_start), null)
    on conflict (stream_id) do nothing
    returning version, tx_order, base, head`, undefined, true),
      exists: appendWith(`update ${s}.streams s
    set ${moveStream}
    where s.stream_id = $1
    returning version, tx_order, base, head`),
      exact: appendWith(`update ${s}.streams s
    set ${moveStream}
    where s.stream_id = $1 and s.version = $9
    returning version, tx_order, base, head`),
    },

    streamVersion: `select version from ${s}.streams where stream_id = $1`,

    eventsById: `select ${EVENT_COLUMNS} from ${s}.events where id = any($1::uuid[]) order by position`,

    /** $5: only these types (a store's declared types), or all when null. */
    readStream: `select ${EVENT_COLUMNS}
      from ${s}.events
      where stream_id = $1 and stream_version >= $2 and stream_version <= $3
        and ($5::text[] is null or type = any($5::text[]))
      order by stream_version
      limit $4`,

    /**
     * Only rows whose transaction order is below the oldest transaction still running are
     * read: those transactions have all ended, so nothing can appear behind the checkpoint.
     */
    readAll: `select ${EVENT_COLUMNS}
      from ${s}.events
      where (tx_order, position) > ($1, $2)
        and tx_order < ${eventFrontierSql(s)}
        and ($4::text[] is null or type = any($4::text[]))
        and ($5::timestamptz is null or occurred_at >= $5)
        and ($6::timestamptz is null or occurred_at < $6)
      order by tx_order, position
      limit $3`,

    /**
     * Committed events a reader cannot deliver yet, and what holds them back: the oldest
     * transaction with an id that may still append (a marked one, a processor's batch, holds no
     * reader back; `backend_xid` holds the low 32 bits of the id, all the mark's key needs).
     */
    readerDelay: `with frontier as (select ${eventFrontierSql(s)} as tx_order)
      select (select count(*) from ${s}.events, frontier where events.tx_order >= frontier.tx_order) as held_back,
             (select extract(epoch from now() - min(xact_start)) * 1000 from pg_stat_activity
               where backend_xid is not null and pid <> pg_backend_pid() and not ${holdsMark('backend_xid')}) as oldest_writer_ms,
             (select extract(epoch from now() - min(prepared)) * 1000 from pg_prepared_xacts) as oldest_prepared_ms`,

    /**
     * Whether the log (or the outbox, which orders its rows the same way) holds transaction
     * orders this cluster has not reached: a restore elsewhere.
     */
    rewound: `select greatest((select coalesce(max(tx_order), 0) from ${s}.events), (select coalesce(max(tx_order), 0) from ${s}.outbox))
        >= pg_snapshot_xmax(pg_current_snapshot())::text::bigint + (select tx_order_offset from ${s}.store_settings) as rewound`,

    /** Moves the offset past every recorded order. Runs with appends locked out. */
    rebase: [
      `lock table ${s}.streams, ${s}.events, ${s}.outbox_aggregates, ${s}.outbox in exclusive mode`,
      `update ${s}.store_settings
         set tx_order_offset = greatest(tx_order_offset, greatest((select coalesce(max(tx_order), 0) from ${s}.events),
           (select coalesce(max(tx_order), 0) from ${s}.outbox)) + 1 - pg_snapshot_xmin(pg_current_snapshot())::text::bigint)
       returning tx_order_offset`,
    ],
  } as const;
}

export type EventStoreSql = ReturnType<typeof eventStoreSql>;
