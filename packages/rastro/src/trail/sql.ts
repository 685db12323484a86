import { eventFrontierSql } from '../store/sql.js';

/** An event's link: its own column, or, for an event appended before the chain, the one migration 0019 stored beside it. */
export const linkOf = (e: string, s: string) => `coalesce(${e}.hash, (select h.hash from ${s}.event_hashes h where h.position = ${e}.position))`;

/** The trail's statements for one schema (`s` validated and quoted). */
export function trailSql(s: string) {
  const blockColumns = `block, first_tx_order, first_position, last_tx_order, last_position, events, encode(root, 'hex') as root, encode(prev, 'hex') as prev,
    encode(hash, 'hex') as hash, sealed_at`;
  return {
    blockColumns,
    lastBlock: `select ${blockColumns} from ${s}.trail_blocks order by block desc limit 1`,
    block: `select ${blockColumns} from ${s}.trail_blocks where block = $1`,
    /** Blocks $1 to $2, in order. */
    blocks: `select ${blockColumns} from ${s}.trail_blocks where block between $1 and $2 order by block`,
    /**
     * The next events to seal after ($1, $2), at most $3, in global commit order and below the
     * no-skip frontier: nothing can commit behind them later, so a block never misses one.
     */
    toSeal: `select position, tx_order, ${linkOf('e', s)} as link from ${s}.events e
      where (e.tx_order, e.position) > ($1, $2) and e.tx_order < ${eventFrontierSql(s)}
      order by e.tx_order, e.position limit $3`,
    insertBlock: `insert into ${s}.trail_blocks (block, first_tx_order, first_position, last_tx_order, last_position, events, root, prev, hash)
      values ($1, $2, $3, $4, $5, $6, decode($7, 'hex'), decode($8, 'hex'), decode($9, 'hex'))
      on conflict (block) do nothing returning block`,
    /** Whether events at positions up to $1 wait to be sealed. */
    unsealedUpTo: `with last as (select last_tx_order, last_position from ${s}.trail_blocks order by block desc limit 1)
      select exists (select 1 from ${s}.events e where e.position <= $1
        and (e.tx_order, e.position) > (coalesce((select last_tx_order from last), 0), coalesce((select last_position from last), 0))) as waiting`,
    maxPosition: `select coalesce(max(position), 0)::bigint as position from ${s}.events`,
    /** Events committed below the frontier and not sealed yet, and the age of the oldest. */
    sealLag: `with last as (select last_tx_order, last_position from ${s}.trail_blocks order by block desc limit 1)
      select count(*)::bigint as events, extract(epoch from now() - min(e.recorded_at)) as seconds from ${s}.events e
      where (e.tx_order, e.position) > (coalesce((select last_tx_order from last), 0), coalesce((select last_position from last), 0))`,
  } as const;
}

export type TrailSql = ReturnType<typeof trailSql>;

/** A problem of an event's link, in SQL: `e` the event with its link, `p_link`/`p_version` its predecessor's (null when none). */
function linkProblem(e: string, prevLink: string, prevVersion: string, s: string): string {
  return `case
      when ${e}.link is null then 'unhashed'
      when ${e}.stream_version <> coalesce(${prevVersion}, 0) + 1 then 'gap'
      when ${e}.link <> ${s}.event_link(${prevLink}, ${e}.id, ${e}.stream_id, ${e}.stream_version, ${e}.schema_version, ${e}.occurred_at,
        ${e}.recorded_at, ${e}.type, ${e}.data, ${e}.metadata) then 'altered'
    end`;
}

/** The verifier's statements for one schema (`s` validated and quoted). */
export function verifySql(s: string) {
  return {
    /** The statistics' cumulative deletes and updates of the trail's tables (nothing ever deletes or updates them). */
    tableWrites: `select coalesce(sum(n_tup_del), 0)::bigint as deleted, coalesce(sum(n_tup_upd), 0)::bigint as updated
      from pg_stat_user_tables where schemaname = $1 and relname in ('events', 'event_hashes', 'trail_blocks')`,
    snapshot: `select (pg_snapshot_xmin(pg_current_snapshot())::text::bigint & 4294967295)::text as xid, coalesce((select max(position) from ${s}.events), 0)::bigint as position`,
    /** Every event whose link does not hold, $1 at most: the whole log, stream by stream. */
    allLinks: `select x.stream_id, x.stream_version, x.id, x.problem from (
        select e.stream_id, e.stream_version, e.id, ${linkProblem('e', 'lag(e.link) over w', 'lag(e.stream_version) over w', s)} as problem
        from (select e.*, ${linkOf('e', s)} as link from ${s}.events e) e
        window w as (partition by e.stream_id order by e.stream_version)) x
      where x.problem is not null limit $1`,
    /** Events after position $1 whose link does not hold against their predecessor, $2 at most. */
    newLinks: `select x.stream_id, x.stream_version, x.id, x.problem from (
        select e.stream_id, e.stream_version, e.id, ${linkProblem('e', 'p.link', 'p.stream_version', s)} as problem
        from (select e.*, ${linkOf('e', s)} as link from ${s}.events e where e.position > $1) e
        left join lateral (select p.stream_version, ${linkOf('p', s)} as link from ${s}.events p
          where p.stream_id = e.stream_id and p.stream_version = e.stream_version - 1) p on true) x
      where x.problem is not null limit $2`,
    /**
     * Stream rows that disagree with their events: a version other than their last event's, or a
     * head other than its link. All of them, or ($1 'changed') those written since xid $2.
     */
    streams: `select s.stream_id, s.version, last.stream_version as last_version, s.head is not distinct from last.link as head_holds
      from ${s}.streams s
      left join lateral (select e.stream_version, ${linkOf('e', s)} as link from ${s}.events e
        where e.stream_id = s.stream_id order by e.stream_version desc limit 1) last on true
      where ($1::text = 'all' or age(s.xmin) <= age($2::xid))
        and (last.stream_version is distinct from s.version or s.head is distinct from last.link)
      limit $3`,
    /** The links of the events in a block's range, in global commit order. */
    blockLinks: `select ${linkOf('e', s)} as link from ${s}.events e
      where (e.tx_order, e.position) >= ($1, $2) and (e.tx_order, e.position) <= ($3, $4)
      order by e.tx_order, e.position`,
    blockCount: `select count(*)::bigint as n, coalesce(max(block), 0)::bigint as last from ${s}.trail_blocks`,
  } as const;
}
