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
  /** Committed events of the run wait behind a transaction still open (the no-skip frontier): read again soon. */
  heldBack?: boolean;
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

type LedgerJson = [eventId: string, effectType: string, state: string];

/** Events and their ledger entries as a run reads them, each batch one JSON array. */
function decode(row: { events: string; ledger: string | null }): { events: PartitionedEvent[]; ledger: KnownEffects } {
  const ledger = new Map<string, Record<string, string>>();
  if (row.ledger !== null) {
    for (const [eventId, effectType, state] of JSON.parse(row.ledger) as LedgerJson[]) {
      const entries = ledger.get(eventId);
      if (entries) entries[effectType] = state;
      else ledger.set(eventId, { [effectType]: state });
    }
  }
  return { events: decodeEvents(row.events), ledger };
}

function decodeEvents(json: string): PartitionedEvent[] {
  const rows = JSON.parse(json) as RunEventJson[];
  const events = new Array<PartitionedEvent>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const [position, txOrder, streamId, streamVersion, id, type, data, metadata, occurredMs, recordedMs, partition] = rows[i]!;
    // JSON numbers beyond 2^53 would be rounded silently; the log's never get there, but say so if they do.
    if (!Number.isSafeInteger(position) || !Number.isSafeInteger(txOrder)) throw new RangeError('event position exceeds Number.MAX_SAFE_INTEGER');
    events[i] = {
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
  }
  return events;
}

/** The next events of a run's range after `after`, never skipping a committed one. */
export async function readRunBatch(
  run: RunContext,
  range: RunRange,
  after: LogCheckpoint,
  limit: number,
  partitions?: { count: number; owned: number[] },
): Promise<RunEvents> {
  const { db, sql } = run;
  const values = [
    after.txOrder, after.position, limit, handledTypes(run.processor), ...rangeValues(range),
    partitions?.count ?? 1, partitions?.owned ?? null, appliedTypes(run.policy), run.runId,
  ];
  // Not prepared, as the probe: the effect ledger it joins grows from empty during a first run.
  const { rows } = await db.query<{ events: string; ledger: string | null; blocked: string[]; held: boolean }>(sql.readBatch, values);
  return { ...decode(rows[0]!), blocked: new Set(rows[0]!.blocked), heldBack: rows[0]!.held };
}

/** Events by id, in log order, as a run reads them, none blocked: for re-running parked events. */
export async function readRunEvents(run: RunContext, ids: string[]): Promise<RunEvents> {
  const { rows } = await run.db.query<{ events: string; ledger: string | null }>(run.sql.eventsByIds, [ids, appliedTypes(run.policy)]);
  return { ...decode(rows[0]!), blocked: new Set() };
}

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
