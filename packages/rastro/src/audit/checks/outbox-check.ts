import { relaySourceOf } from '../../outbox/relay-admin.js';
import { AGGREGATE_KEY, partitionOf, publishedByEveryRelay, relaysSql } from '../../outbox/sql.js';
import { checkpointKey, checkpointMap, describeMoves, movedBack, movedBackByRun, samePlace, type CheckpointMap, type CheckpointRow } from '../checkpoint-memory.js';
import { inSnapshot, type AuditCheck, type CheckContext, type Finding } from '../finding.js';

/** Aggregates out of order reported per audit. */
const ORDER_LIMIT = 100;

function outboxCheckSql(s: string) {
  return {
    relays: `select run_id, processor, source, partitions from ${s}.processor_runs where mode = 'relay' and partitions is not null order by run_id`,
    checkpoints: `select c.run_id, c.partition, c.tx_order, c.position from ${s}.processor_checkpoints c
      join ${s}.processor_runs r on r.run_id = c.run_id where r.mode = 'relay'`,
    /** The last position the outbox ever handed out, and the log's last event: nothing can be checkpointed past them. */
    heads: `select coalesce(pg_sequence_last_value(pg_get_serial_sequence($1, 'position')), 0)::bigint as outbox_position,
        (select json_build_array(tx_order, position) from ${s}.events order by tx_order desc, position desc limit 1)::text as last_event`,
    /**
     * Messages of one aggregate whose transaction order goes down as their position goes up, in
     * the audited range: the relay, reading in (tx_order, position) order, would publish them out
     * of commit order.
     */
    outOfOrder: `select aggregate_type, aggregate_id, position from (
        select o.aggregate_type, o.aggregate_id, o.position, o.tx_order,
               lag(o.tx_order) over (partition by o.aggregate_type, o.aggregate_id order by o.position) as previous
          from ${s}.outbox o where o.tx_order >= $1 and o.tx_order < $2) t
      where previous > tx_order limit ${ORDER_LIMIT}`,
    anyParked: `select exists (select 1 from ${s}.parked_events p join ${s}.processor_runs r on r.run_id = p.run_id and r.mode = 'relay' and r.source = 'outbox') as any`,
    /** Messages published (behind their partition's checkpoint, not parked) after a message of their aggregate still parked. */
    publishedPastParked: `select p.run_id, o2.id, o2.aggregate_type, o2.aggregate_id, p.event_id as parked
      from ${s}.parked_events p
      join ${s}.processor_runs r on r.run_id = p.run_id and r.mode = 'relay' and r.source = 'outbox'
      join ${s}.outbox o1 on o1.position = p.position and o1.id = p.event_id
      join ${s}.outbox o2 on o2.aggregate_type = o1.aggregate_type and o2.aggregate_id = o1.aggregate_id
        and (o2.tx_order, o2.position) > (o1.tx_order, o1.position)
      join ${s}.processor_checkpoints c on c.run_id = p.run_id and c.partition = ${partitionOf(AGGREGATE_KEY.replace(/o\./g, 'o2.'), 'r.partitions')}
        and (o2.tx_order, o2.position) <= (c.tx_order, c.position)
      where not exists (select 1 from ${s}.parked_events q where q.run_id = p.run_id and q.event_id = o2.id)
      limit ${ORDER_LIMIT}`,
    /** Messages every relay published that are older than retention ($1 days) and its pass interval ($2 ms): retention is not running. */
    pastRetention: `with relays as (${relaysSql(s)})
      select count(*)::bigint as n, extract(epoch from now() - min(o.created_at))::float8 as age from ${s}.outbox o
      where o.created_at < now() - $1 * interval '1 day' - $2 * interval '1 millisecond'
        and exists (select 1 from relays) and ${publishedByEveryRelay(s)}`,
  } as const;
}

type Sql = ReturnType<typeof outboxCheckSql>;

interface RelayRow {
  run_id: string;
  processor: string;
  source: string;
  partitions: number;
}

export interface OutboxCheckOptions {
  /** Published messages are deleted after this many days (RASTRO_OUTBOX_RETENTION_DAYS); undefined: not checked. */
  retentionDays?: number;
  /** How often retention runs, in ms. @defaultValue 1 h */
  retentionIntervalMs?: number;
}

function checkpointFindings(ctx: CheckContext, relays: RelayRow[], rows: CheckpointRow[], heads: { outbox: number; lastEvent: [number, number] }): Finding[] {
  const findings: Finding[] = [];
  const sourceOf = new Map(relays.map((r) => [r.run_id, r.source]));
  for (const row of rows) {
    const [tx, position] = [Number(row.tx_order), Number(row.position)];
    // The outbox's rows are deleted by retention: its head is the last position ever handed out.
    // The log keeps every event: its head is the last one, in the order relays read it.
    const outbox = sourceOf.get(row.run_id) === 'outbox';
    const past = outbox ? position > heads.outbox : tx > heads.lastEvent[0] || (tx === heads.lastEvent[0] && position > heads.lastEvent[1]);
    if (past) {
      findings.push({ check: 'outbox', kind: 'checkpoint-past-head', subject: { type: 'relay', id: row.run_id },
        detail: `partition ${row.partition} is checkpointed at (${tx}, ${position}), past the last ${outbox ? `position ever written (${heads.outbox})` : `event (${heads.lastEvent.join(', ')})`}: what is written later is never published`,
        action: 'restore the checkpoint from a backup, or set it back to the last message the broker holds' });
    }
  }
  for (const [runId, moves] of movedBackByRun(movedBack(ctx.memory.checkpoints, checkpointMap(rows), new Set(relays.map((r) => r.run_id))))) {
    findings.push({ check: 'outbox', kind: 'checkpoint-moved-back', subject: { type: 'relay', id: runId },
      detail: `went back since the last audit: ${describeMoves(moves)}; the messages between are published again (same ids, so consumers that deduplicate drop them)`,
      action: 'find what rewrote the checkpoint (a restore, a hand edit); the relay catches up by itself' });
  }
  return findings;
}

/** Relay partitions that stood still since the last audit while a message waited; and the lag of each relay. */
async function stuckRelays(ctx: CheckContext, relays: RelayRow[], now: CheckpointMap) {
  const findings: Finding[] = [];
  const waiting: CheckpointMap = {};
  const figures: Record<string, number | null> = {};
  const seenCheckpoints = (ctx.memory.checkpoints ?? {}) as CheckpointMap;
  const seenWaiting = (ctx.memory.waiting ?? {}) as CheckpointMap;
  for (const relay of relays) {
    const source = relaySourceOf(ctx.store, relay.source);
    const stopped: number[] = [];
    let oldest: number | undefined;
    for (let partition = 0; partition < relay.partitions; partition++) {
      const key = checkpointKey(relay.run_id, partition);
      const [cpTx, cpPos] = now[key] ?? [0, 0];
      // The relay's own read: the message it publishes next in this partition, if any.
      const [next] = await source.read({ txOrder: cpTx, position: cpPos }, 1, { count: relay.partitions, owned: [partition] });
      if (!next || next.txOrder >= ctx.scope.frontier) continue;
      waiting[key] = [next.txOrder, next.position];
      oldest = Math.min(oldest ?? Infinity, next.message.occurredAt.getTime());
      if (seenWaiting[key] && samePlace(seenCheckpoints[key] ?? [0, 0], now[key] ?? [0, 0])) stopped.push(partition);
    }
    // The lag from the next message of each partition: what the relay reads anyway, not a count over the outbox.
    const lagSeconds = oldest === undefined ? null : Math.max(0, (Date.now() - oldest) / 1000);
    figures[`${relay.processor}.lagSeconds`] = lagSeconds;
    figures[`${relay.processor}.partitionsWaiting`] = Object.keys(waiting).filter((key) => key.startsWith(`${relay.run_id}|`)).length;
    if (stopped.length > 0) {
      const { pending } = await source.pending(relay.run_id, relay.partitions);
      findings.push({ check: 'outbox', kind: 'relay-stopped', subject: { type: 'relay', id: relay.run_id },
        detail: `partitions ${stopped.join(', ')} have not moved since the last audit while messages waited: ${pending} messages unpublished, the oldest ${Math.round(lagSeconds ?? 0)} s old`,
        action: 'start a relay (rastro relay, or serve with RASTRO_RELAY=on); if one runs, look at its log for a broker outage',
        ageSeconds: lagSeconds ?? undefined });
    }
  }
  return { findings, waiting, figures };
}

async function orderFindings(ctx: CheckContext, sql: Sql): Promise<Finding[]> {
  const findings: Finding[] = [];
  const { rows } = await ctx.db.query<{ aggregate_type: string; aggregate_id: string; position: number }>(sql.outOfOrder, [ctx.scope.fromTxOrder, ctx.scope.frontier]);
  for (const row of rows) {
    findings.push({ check: 'outbox', kind: 'aggregate-out-of-order', subject: { type: 'message', id: `${row.aggregate_type}:${row.aggregate_id}` },
      detail: `the message at position ${row.position} has a lower transaction order than the one before it: relays publish this aggregate out of commit order`,
      action: 'find what wrote outbox rows outside outbox.write (a restore into another cluster needs rastro store rebase)' });
  }
  if (!(await ctx.db.query<{ any: boolean }>(sql.anyParked)).rows[0]?.any) return findings;
  const { rows: past } = await ctx.db.query<{ run_id: string; id: string; aggregate_type: string; aggregate_id: string; parked: string }>(sql.publishedPastParked);
  for (const row of past) {
    findings.push({ check: 'outbox', kind: 'published-past-parked', subject: { type: 'message', id: row.id },
      detail: `${row.run_id} published it while the earlier message ${row.parked} of ${row.aggregate_type}:${row.aggregate_id} is still parked: consumers saw them out of order`,
      action: `tell the consumers of ${row.aggregate_type}:${row.aggregate_id}; then rastro outbox parked retry ${row.parked}` });
  }
  return findings;
}

async function retentionFindings(ctx: CheckContext, sql: Sql, options: OutboxCheckOptions): Promise<Finding[]> {
  if (options.retentionDays === undefined) return [];
  const { rows } = await ctx.db.query<{ n: number; age: number | null }>(sql.pastRetention, [options.retentionDays, options.retentionIntervalMs ?? 3_600_000]);
  const n = Number(rows[0]?.n ?? 0);
  if (n === 0) return [];
  return [{ check: 'outbox', kind: 'past-retention', subject: { type: 'relay', id: 'retention' },
    detail: `${n} published messages are older than the ${options.retentionDays}-day retention and its hourly pass: retention is not running`,
    action: `run rastro outbox cleanup --days ${options.retentionDays}, and run serve with the relay on (it runs retention hourly)`,
    ageSeconds: rows[0]?.age === null ? undefined : Number(rows[0]?.age) }];
}

/**
 * The outbox: every committed message published behind its partition's checkpoint or parked
 * (no relay standing still while messages wait), no checkpoint past the head or moved back,
 * each aggregate published in order as far as the checkpoints show, nothing past retention.
 */
export function outboxCheck(options: OutboxCheckOptions = {}): AuditCheck {
  return {
    name: 'outbox',
    summary: 'every message published or parked, in order per aggregate; no relay checkpoint past the head or moved back; lag; nothing past retention',
    async run(ctx) {
      const sql = outboxCheckSql(ctx.s);
      const { relays, checkpoints, heads } = await inSnapshot(ctx, async (tx) => ({
        relays: (await tx.query<RelayRow>(sql.relays)).rows,
        checkpoints: (await tx.query<CheckpointRow>(sql.checkpoints)).rows,
        heads: (await tx.query<{ outbox_position: number; last_event: string | null }>(sql.heads, [`${ctx.s}.outbox`])).rows[0],
      }));
      const now = checkpointMap(checkpoints);
      const lastEvent = (heads?.last_event ? JSON.parse(heads.last_event) : [0, 0]) as [number, number];
      const findings = checkpointFindings(ctx, relays, checkpoints, { outbox: Number(heads?.outbox_position ?? 0), lastEvent });
      const stuck = await stuckRelays(ctx, relays, now);
      findings.push(...stuck.findings, ...(await orderFindings(ctx, sql)), ...(await retentionFindings(ctx, sql, options)));
      ctx.progress(checkpoints.length);
      return { findings, examined: checkpoints.length, memory: { checkpoints: now, waiting: stuck.waiting }, figures: stuck.figures };
    },
  };
}
