import type { Queryable } from '../db/database.js';
import { quoteSchema } from '../db/schema-name.js';

/**
 * Committed events of the processor's types (all types when $2 is null) past their partition's
 * live checkpoint, up to ($6, $7): work a live runner has not done yet, and the age of the oldest
 * of them. Events committed but held back by an older open transaction count too. The scan starts
 * after the lowest checkpoint ($4, $5: LOG_START while a partition has none), on the (tx_order,
 * position) index, so it costs what is past the checkpoints, not the log. $1 run id, $3
 * partition count.
 */
function backlogSql(s: string) {
  return {
    lowest: `select tx_order, position from ${s}.processor_checkpoints where run_id = $1 order by tx_order, position limit 1`,
    partitions: `select count(*)::int as n from ${s}.processor_checkpoints where run_id = $1`,
    last: `select tx_order, position from ${s}.events order by tx_order desc, position desc limit 1`,
    left: `select count(*)::bigint as n, floor(extract(epoch from now() - min(e.recorded_at)) * 1000)::bigint as oldest_ms from ${s}.events e
      where (e.tx_order, e.position) > ($4, $5) and (e.tx_order, e.position) <= ($6, $7) and ($2::text[] is null or e.type = any($2::text[]))
        and not exists (select 1 from ${s}.processor_checkpoints cp where cp.run_id = $1
                         and cp.partition = mod(hashtext(e.stream_id)::bigint + 2147483648, $3)
                         and (cp.tx_order, cp.position) >= (e.tx_order, e.position))`,
  } as const;
}

/** A place in the log: the (tx_order, position) of an event. */
export interface LogPlace {
  tx_order: number;
  position: number;
}

/** How far a live run is behind: events of its types past its checkpoints, and the oldest one's age. */
export interface LiveBacklog {
  events: number;
  /** Age of the oldest event not yet handled, in milliseconds; null when there is none. */
  oldestMs: number | null;
}

/**
 * Reads a live run's backlog. `types` null counts every type (a processor this process has not
 * loaded); `end` bounds the count (the log's last event when omitted).
 *
 * @example
 * ```ts
 * const backlog = liveBacklog(db, schema)
 * const { events, oldestMs } = await backlog.of('live:orders', ['order.snapshot'], 8)
 * ```
 */
export function liveBacklog(db: Queryable, schema: string) {
  const sql = backlogSql(quoteSchema(schema));
  const last = async (): Promise<LogPlace> => (await db.query<LogPlace>(sql.last)).rows[0] ?? { tx_order: 0, position: 0 };
  return {
    last,
    async of(runId: string, types: string[] | null, partitions: number, end?: LogPlace): Promise<LiveBacklog> {
      const through = end ?? (await last());
      const [{ n: checkpointed }] = (await db.query<{ n: number }>(sql.partitions, [runId])).rows as [{ n: number }];
      const low = checkpointed < partitions ? undefined : (await db.query<LogPlace>(sql.lowest, [runId])).rows[0];
      const values = [runId, types, partitions, low?.tx_order ?? 0, low?.position ?? 0, through.tx_order, through.position];
      const row = (await db.query<{ n: number; oldest_ms: number | null }>(sql.left, values)).rows[0];
      const events = Number(row?.n ?? 0);
      return { events, oldestMs: events === 0 || row?.oldest_ms === null || row?.oldest_ms === undefined ? null : Math.max(0, Number(row.oldest_ms)) };
    },
  };
}
