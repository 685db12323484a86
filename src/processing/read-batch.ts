import type { Queryable } from '../db/database.js';
import { LOG_START, type EventMetadata, type LogCheckpoint, type RecordedEvent } from '../store/event.js';
import { appliedTypes } from './policy.js';
import type { KnownEffects } from './effect-round.js';
import type { Processor } from './processor.js';
import type { RunContext } from './run-context.js';
import type { ProcessingSql } from './sql.js';

/** The slice of the log a run covers. */
export interface RunRange {
  from: Date | null;
  to: Date | null;
  fromPosition: number | null;
  toPosition: number | null;
}

export const WHOLE_LOG: RunRange = { from: null, to: null, fromPosition: null, toPosition: null };

export interface PartitionedEvent extends RecordedEvent {
  partition: number;
}

/** Events as a run reads them, with their effect ledger entries. */
export interface RunEvents {
  events: PartitionedEvent[];
  ledger: KnownEffects;
  /** Streams with parked events of the run when the events were read: their events wait. */
  blocked: Set<string>;
  /** Parked events being retried: the batch that handles them unparks them in its commit. */
  unpark?: string[];
}

export function handledTypes(processor: Processor): string[] {
  return Object.keys(processor.handlers);
}

function rangeValues(range: RunRange): unknown[] {
  return [range.from?.toISOString() ?? null, range.to?.toISOString() ?? null, range.fromPosition, range.toPosition];
}

type RunEventJson = [
  position: number,
  txOrder: number,
  streamId: string,
  streamVersion: number,
  id: string,
  type: string,
  data: Record<string, unknown>,
  metadata: EventMetadata,
  occurredMs: number,
  recordedMs: number,
  partition: number,
];

function decodeEvents(rows: { event: string }[]): PartitionedEvent[] {
  return rows.map((row): PartitionedEvent => {
    const [position, txOrder, streamId, streamVersion, id, type, data, metadata, occurredMs, recordedMs, partition] = JSON.parse(row.event) as RunEventJson;
    // JSON numbers beyond 2^53 would be rounded silently; the log's never get there, but say so if they do.
    if (!Number.isSafeInteger(position) || !Number.isSafeInteger(txOrder)) throw new RangeError('event position exceeds Number.MAX_SAFE_INTEGER');
    return {
      id,
      streamId,
      streamVersion,
      position,
      txOrder,
      type,
      data,
      metadata,
      occurredAt: new Date(occurredMs),
      recordedAt: new Date(recordedMs),
      partition,
    };
  });
}

function decodeLedger(rows: { entries: string | null }[]): KnownEffects {
  return rows[0]?.entries ? (JSON.parse(rows[0].entries) as KnownEffects) : NO_LEDGER;
}

const NO_LEDGER: KnownEffects = Object.freeze({});

/** The next events of a run's range after `after`, never skipping a committed one. */
export async function readRunBatch(
  run: RunContext,
  range: RunRange,
  after: LogCheckpoint,
  limit: number,
  partitions?: { count: number; owned: number[] },
): Promise<RunEvents> {
  const { db, sql } = run;
  const next = [after.txOrder, after.position, limit, handledTypes(run.processor), ...rangeValues(range), partitions?.count ?? 1, partitions?.owned ?? null];
  const types = appliedTypes(run.policy);
  // Three statements at once: the events, their ledger entries, and the run's parked streams
  // (few: all of them rather than a lookup per stream of the batch).
  const [events, ledger, blocked] = await Promise.all([
    db.query<{ event: string }>(sql.readBatch, next, { prepare: true }).then(({ rows }) => decodeEvents(rows)),
    types.length === 0 ? NO_LEDGER : db.query<{ entries: string | null }>(sql.ledgerOfNextEvents, [...next, types], { prepare: true }).then(({ rows }) => decodeLedger(rows)),
    db.query<{ stream_id: string }>(sql.blockedStreams, [run.runId], { prepare: true }),
  ]);
  return { events, ledger, blocked: new Set(blocked.rows.map((row) => row.stream_id)) };
}

/** Events by id, in log order, as a run reads them, none blocked: for re-running parked events. */
export async function readRunEvents(run: RunContext, ids: string[]): Promise<RunEvents> {
  const types = appliedTypes(run.policy);
  const [events, ledger] = await Promise.all([
    run.db.query<{ event: string }>(run.sql.eventsByIds, [ids]).then(({ rows }) => decodeEvents(rows)),
    types.length === 0 ? NO_LEDGER : run.db.query<{ entries: string | null }>(run.sql.ledgerOfEvents, [ids, types]).then(({ rows }) => decodeLedger(rows)),
  ]);
  return { events, ledger, blocked: new Set() };
}

/** Whether events of the range are committed but still behind an open transaction. */
/** Whether events of the range exist after `after`, committed or not yet visible below the frontier. */
export async function rangeRemaining(db: Queryable, sql: ProcessingSql, processor: Processor, range: RunRange, after: LogCheckpoint): Promise<boolean> {
  const { rows } = await db.query<{ remaining: boolean }>(sql.remainingAfter, [handledTypes(processor), ...rangeValues(range), after.txOrder, after.position]);
  return rows[0]?.remaining ?? false;
}

export async function countRange(db: Queryable, sql: ProcessingSql, processor: Processor, range: RunRange): Promise<number> {
  const { rows } = await db.query<{ n: number }>(sql.countRange, [handledTypes(processor), ...rangeValues(range)]);
  return Number(rows[0]?.n ?? 0);
}

export async function loadCheckpoints(db: Queryable, sql: ProcessingSql, runId: string, partitions: number[]): Promise<Map<number, LogCheckpoint>> {
  const { rows } = await db.query<{ partition: number; tx_order: number; position: number }>(sql.checkpoints, [runId, partitions]);
  const found = new Map(rows.map((row) => [row.partition, { txOrder: row.tx_order, position: row.position }]));
  return new Map(partitions.map((partition) => [partition, found.get(partition) ?? LOG_START]));
}

export function isAfter(event: LogCheckpoint, checkpoint: LogCheckpoint): boolean {
  return event.txOrder > checkpoint.txOrder || (event.txOrder === checkpoint.txOrder && event.position > checkpoint.position);
}
