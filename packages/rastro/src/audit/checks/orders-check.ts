import type { Queryable } from '../../db/database.js';
import { ORDER_NORMALIZER, ORDER_PROJECTION } from '../../intake/order-normalizer.js';
import { foldOrderHistory, ORDER_IMPORT, ORDER_SNAPSHOT, type NormalizedOrder } from '../../intake/order-state.js';
import { sameJson } from '../../processing/state-writes.js';
import { decodeEvent } from '../../store/decode.js';
import { EVENT_COLUMNS, toStoredEvent, type EventRow } from '../../store/event.js';
import { keysetPages, slices } from '../keyset-pages.js';
import { changedSince, foundSubjects, rememberedSubjects, inSnapshot, type AuditCheck, type CheckContext, type Finding } from '../finding.js';

/** Orders folded per snapshot (one short transaction each). */
const ORDERS_PER_CHUNK = 1000;
const STREAM_PREFIX = 'order:';
const LIVE_RUN = `live:${ORDER_NORMALIZER}`;
const ORDER_TYPES = [ORDER_SNAPSHOT, ORDER_IMPORT];

function ordersSql(s: string) {
  return {
    /** Order streams in key order after $1: the chunks of a full audit. */
    page: `select stream_id from ${s}.streams where starts_with(stream_id, '${STREAM_PREFIX}') and stream_id > $1 order by stream_id limit ${ORDERS_PER_CHUNK}`,
    /** Order streams with events in the audited range, and order rows written since the last audit ($3..$5). */
    changed: `select distinct stream_id from ${s}.events where tx_order >= $1 and tx_order < $2 and type = any($6::text[])
      union select '${STREAM_PREFIX}' || p.key from ${s}.projections p where p.projection = '${ORDER_PROJECTION}' and ${changedSince('p', 3, 'updated_at')}`,
    /** Order rows whose stream does not exist. */
    orphans: `select p.key from ${s}.projections p where p.projection = '${ORDER_PROJECTION}'
      and ${changedSince('p', 1, 'updated_at')}
      and not exists (select 1 from ${s}.streams st where st.stream_id = '${STREAM_PREFIX}' || p.key) limit 1000`,
    run: `select coalesce(partitions, 8)::int as partitions from ${s}.processor_runs where run_id = $1`,
    checkpoints: `select partition, tx_order, position from ${s}.processor_checkpoints where run_id = $1`,
    events: `select ${EVENT_COLUMNS},
        mod(hashtext(stream_id)::bigint + 2147483648, $2)::int as partition
      from ${s}.events where stream_id = any($1::text[]) order by stream_id, stream_version`,
    rows: `select key, doc, event_id from ${s}.projections where projection = '${ORDER_PROJECTION}' and key = any($1::text[])`,
    /** The first event of each stream the live normalizer parked: it has not applied it, nor any after it. */
    parked: `select stream_id, min(position)::bigint as position from ${s}.parked_events where run_id = $1 and stream_id = any($2::text[]) group by stream_id`,
  } as const;
}

type Sql = ReturnType<typeof ordersSql>;
type Place = [number, number];

/**
 * How far the stored row must reflect the stream: through the event that wrote it, and through
 * every event the live normalizer has passed (behind its partition's checkpoint, before any
 * event of the stream it parked). Events after that are the normalizer's lag, not a defect.
 */
function handledThrough(events: (EventRow & { partition: number })[], writer: string | null, checkpoints: Map<number, Place>, parkedAt: number | undefined): number {
  let through = 0;
  for (const event of events) {
    const cp = checkpoints.get(event.partition);
    const passed = cp && (Number(event.tx_order) < cp[0] || (Number(event.tx_order) === cp[0] && Number(event.position) <= cp[1]));
    const parked = parkedAt !== undefined && Number(event.position) >= parkedAt;
    if ((passed && !parked) || event.id === writer) through = Math.max(through, Number(event.stream_version));
  }
  return through;
}

function orderFinding(key: string, stored: NormalizedOrder, expected: NormalizedOrder, through: number): Finding {
  const subject = { type: 'order' as const, id: key };
  const action = `rastro orders renormalize ${key} (it re-reads the raw snapshots), then find what wrote the row`;
  if (stored.paidAt !== expected.paidAt) {
    return { check: 'orders', kind: 'paid-at-moved', subject, detail: `paidAt is ${stored.paidAt ?? 'empty'}, but the first move to received in its snapshots (through version ${through}) is ${expected.paidAt ?? 'none'}`, action };
  }
  const fields = Object.keys({ ...expected, ...stored }).filter((field) => !sameJson((stored as unknown as Record<string, unknown>)[field], (expected as unknown as Record<string, unknown>)[field]));
  return { check: 'orders', kind: 'order-differs', subject, detail: `the row differs from the fold of its snapshots through version ${through} in ${fields.join(', ')}`, action };
}

async function examineChunk(tx: Queryable, sql: Sql, streamIds: string[]): Promise<Finding[]> {
  const partitions = (await tx.query<{ partitions: number }>(sql.run, [LIVE_RUN])).rows[0]?.partitions ?? 8;
  const checkpoints = new Map((await tx.query<{ partition: number; tx_order: number; position: number }>(sql.checkpoints, [LIVE_RUN])).rows
    .map((row): [number, Place] => [Number(row.partition), [Number(row.tx_order), Number(row.position)]]));
  const keys = streamIds.map((id) => id.slice(STREAM_PREFIX.length));
  const [events, rows, parked] = [
    (await tx.query<EventRow & { partition: number }>(sql.events, [streamIds, partitions])).rows,
    new Map((await tx.query<{ key: string; doc: NormalizedOrder; event_id: string | null }>(sql.rows, [keys])).rows.map((row) => [row.key, row])),
    new Map((await tx.query<{ stream_id: string; position: number }>(sql.parked, [LIVE_RUN, streamIds])).rows.map((row) => [row.stream_id, Number(row.position)])),
  ];
  const byStream = new Map<string, (EventRow & { partition: number })[]>();
  for (const event of events) (byStream.get(event.stream_id) ?? byStream.set(event.stream_id, []).get(event.stream_id)!).push(event);
  const findings: Finding[] = [];
  for (const [streamId, history] of byStream) {
    const key = streamId.slice(STREAM_PREFIX.length);
    const row = rows.get(key);
    const through = handledThrough(history, row?.event_id ?? null, checkpoints, parked.get(streamId));
    if (through === 0) continue;
    const colon = key.indexOf(':');
    const folded = foldOrderHistory(key.slice(0, colon), key.slice(colon + 1), history.slice(0, through).map((event) => decodeEvent(toStoredEvent(event), {}, undefined)));
    // As stored: through JSON, as the normalizer's upsert sends it.
    const expected = JSON.parse(JSON.stringify(folded)) as NormalizedOrder;
    if (!row) {
      findings.push({ check: 'orders', kind: 'order-row-missing', subject: { type: 'order', id: key }, detail: `the normalizer passed version ${through} of its stream, but the order has no row`, action: `rastro orders renormalize ${key}` });
    } else if (!sameJson(row.doc, expected)) findings.push(orderFinding(key, row.doc, expected, through));
  }
  return findings;
}

async function* streamChunks(ctx: CheckContext, sql: Sql): AsyncGenerator<string[]> {
  if (ctx.scope.full) {
    const page = async (after: string) => (await ctx.db.query<{ stream_id: string }>(sql.page, [after])).rows.map((r) => r.stream_id);
    return yield* keysetPages(page, '', ORDERS_PER_CHUNK);
  }
  const { rows } = await ctx.db.query<{ stream_id: string }>(sql.changed, [ctx.scope.fromTxOrder, ctx.scope.frontier, ...ctx.scope.changed, ORDER_TYPES]);
  yield* slices([...new Set([...rows.map((r) => r.stream_id), ...rememberedSubjects(ctx.memory).map((key) => `${STREAM_PREFIX}${key}`)])], ORDERS_PER_CHUNK);
}

/**
 * Orders: each normalized row equals the fold of its raw snapshots under the recency guard
 * (the normalizer's own fold, `foldOrderHistory`), through the events the normalizer handled;
 * `paidAt` never moved from the first move to received.
 */
export const ordersCheck: AuditCheck = {
  name: 'orders',
  summary: 'each order row equals the fold of its raw snapshots under the recency guard; paidAt has not moved',
  async run(ctx) {
    const sql = ordersSql(ctx.s);
    const findings: Finding[] = [];
    let examined = 0;
    for await (const ids of streamChunks(ctx, sql)) {
      // One snapshot per chunk: the rows, the events that wrote them and the checkpoint agree.
      findings.push(...(await inSnapshot(ctx, (tx) => examineChunk(tx, sql, ids))));
      ctx.progress((examined += ids.length));
    }
    const { rows: orphans } = await ctx.db.query<{ key: string }>(sql.orphans, [...ctx.scope.changed]);
    for (const row of orphans) {
      findings.push({ check: 'orders', kind: 'order-without-stream', subject: { type: 'order', id: row.key }, detail: 'a normalized order whose raw snapshots are missing', action: 'restore the order stream from a backup' });
    }
    return { findings, examined, memory: { found: foundSubjects(findings) } };
  },
};
