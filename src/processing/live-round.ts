import { quoteSchema } from '../db/schema-name.js';
import { runLive, type LiveOptions } from './live-runner.js';
import type { Processor } from './processor.js';
import { handledTypes } from './read-batch.js';

/**
 * Committed events of the processor's types past their partition's live checkpoint, up to the
 * log's last event when the round began ($6, $7): work a live runner has not done yet. Events
 * committed but held back by an older open transaction count too: the round waits for them. The
 * scan starts after the lowest checkpoint ($4, $5: LOG_START while a partition has none), on the
 * (tx_order, position) index, so it costs what is past the checkpoints, not the log. $1 run id,
 * $2 types, $3 partition count.
 */
function backlogSql(s: string) {
  return {
    lowest: `select tx_order, position from ${s}.processor_checkpoints where run_id = $1 order by tx_order, position limit 1`,
    partitions: `select count(*)::int as n from ${s}.processor_checkpoints where run_id = $1`,
    last: `select tx_order, position from ${s}.events order by tx_order desc, position desc limit 1`,
    left: `select count(*)::bigint as n from ${s}.events e
      where (e.tx_order, e.position) > ($4, $5) and (e.tx_order, e.position) <= ($6, $7) and e.type = any($2::text[])
        and not exists (select 1 from ${s}.processor_checkpoints cp where cp.run_id = $1
                         and cp.partition = mod(hashtext(e.stream_id)::bigint + 2147483648, $3)
                         and (cp.tx_order, cp.position) >= (e.tx_order, e.position))`,
  } as const;
}

export interface LiveRoundOptions extends LiveOptions {
  /** Called while the round runs with the events still to do. */
  onProgress?: (left: number) => void;
  /** How often the round checks what is left, in milliseconds. @defaultValue 25 */
  checkIntervalMs?: number;
}

/**
 * One round of a processor's live run: starts a live runner, lets it take every event committed
 * past the live checkpoints when the round began (waiting, like a replay, for those an older open
 * transaction still holds back from readers), and stops it. The checkpoints are the live run's own, so the next
 * round (or a runner that stays up) continues where this one ended. Resolves to what it did.
 *
 * @example
 * ```ts
 * const { events } = await runLiveRound(normalizer, { store, policy })
 * ```
 */
export async function runLiveRound(processor: Processor, options: LiveRoundOptions): Promise<{ events: number; counters: Record<string, number> }> {
  const sql = backlogSql(quoteSchema(options.store.schema));
  const { db } = options.store;
  const runId = `live:${processor.name}`;
  const partitions = options.partitions ?? 8;
  type Place = { tx_order: number; position: number };
  const end = (await db.query<Place>(sql.last)).rows[0] ?? { tx_order: 0, position: 0 };
  const left = async () => {
    const [{ n: checkpointed }] = (await db.query<{ n: number }>(sql.partitions, [runId])).rows as [{ n: number }];
    const low = checkpointed < partitions ? undefined : (await db.query<Place>(sql.lowest, [runId])).rows[0];
    const values = [runId, handledTypes(processor), partitions, low?.tx_order ?? 0, low?.position ?? 0, end.tx_order, end.position];
    return Number((await db.query<{ n: number }>(sql.left, values)).rows[0]?.n ?? 0);
  };
  let failure: unknown;
  const runner = await runLive(processor, {
    ...options,
    onError: (err) => {
      failure ??= err;
      options.onError?.(err);
    },
  });
  try {
    for (let n = await left(); n > 0 && failure === undefined; n = await left()) {
      options.onProgress?.(n);
      await new Promise((resolve) => setTimeout(resolve, options.checkIntervalMs ?? 25));
    }
  } finally {
    await runner.stop();
  }
  if (failure !== undefined) throw failure;
  const counters = Object.fromEntries(runner.counters.entries());
  return { events: counters.events ?? 0, counters };
}
