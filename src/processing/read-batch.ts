import type { Queryable } from '../db/database.js';
import { LOG_START, toRecordedEvent, type EventRow, type LogCheckpoint, type RecordedEvent } from '../store/event.js';
import type { Processor } from './processor.js';
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

export function handledTypes(processor: Processor): string[] {
  return Object.keys(processor.handlers);
}

function rangeValues(range: RunRange): unknown[] {
  return [range.from?.toISOString() ?? null, range.to?.toISOString() ?? null, range.fromPosition, range.toPosition];
}

/** The next events of a run's range after `after`, never skipping a committed one. */
export async function readRunBatch(
  db: Queryable,
  sql: ProcessingSql,
  processor: Processor,
  range: RunRange,
  after: LogCheckpoint,
  limit: number,
  partitions?: { count: number; owned: number[] },
): Promise<PartitionedEvent[]> {
  const { rows } = await db.query<EventRow & { partition: number }>(sql.readBatch, [
    after.txOrder,
    after.position,
    limit,
    handledTypes(processor),
    ...rangeValues(range),
    partitions?.count ?? 1,
    partitions?.owned ?? null,
  ]);
  return rows.map((row) => {
    const event = toRecordedEvent(row) as PartitionedEvent;
    event.partition = row.partition;
    return event;
  });
}

/** Whether events of the range are committed but still behind an open transaction. */
export async function rangeHeldBack(db: Queryable, sql: ProcessingSql, processor: Processor, range: RunRange): Promise<boolean> {
  const { rows } = await db.query<{ held: boolean }>(sql.heldBack, [handledTypes(processor), ...rangeValues(range)]);
  return rows[0]?.held ?? false;
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
