import type { Queryable } from '../db/database.js';
import type { RastroError } from '../errors.js';
import { decodeData, keysFor, type BatchKeys, type EventDecoder } from '../store/decode.js';
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
  /** Why its data could not be decoded (no upcaster reaches its version, or one failed): the run parks it with this reason. */
  undecodable?: RastroError;
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
  /** The no-skip frontier the read delivered events below (a tx_order): any event it did not see is at or above it. */
  frontier?: number;
  /** Stored rows the events wrote last, read with them (a replay's `preload`), in this read's snapshot. */
  stored?: PreloadedRow[];
}

/** A stored row as a read finds it: [projection, key, doc, version, observed_at in epoch microseconds]. */
export type PreloadedRow = [projection: string, key: string, doc: unknown, version: number | null, observedUs: number | null];

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
  /** The type's index in the handled types, or the type itself when it is not one of them. */
  type: number | string,
  data: Record<string, unknown>,
  metadata: EventMetadata,
  occurredMs: number,
  recordedMs: number,
  partition: number,
  schemaVersion: number,
];

/** [event position (or, for an entry without one, event id), the effect type's index in the applied types, state] */
type LedgerJson = [event: number | string, effectType: number, state: string];

interface RunEventsRow {
  events: string | null;
  n: number;
  ledger: string | null;
}

/**
 * The array whose items the SQL sent without brackets (processing/sql.ts, `jsonItems`): none when
 * null. Adding them here costs one copy of the text; on the server, two.
 */
export function parseJsonItems<Item>(items: string | null): Item[] {
  return items === null ? [] : (JSON.parse(`[${items}]`) as Item[]);
}

/** Events and their ledger entries as a run reads them, each batch one JSON text (see the SQL's runEventsJson). */
async function decode(db: Queryable, row: RunEventsRow, handled: readonly string[], applied: readonly string[], decoder: EventDecoder): Promise<{ events: PartitionedEvent[]; ledger: KnownEffects }> {
  const rows = parseJsonItems<RunEventJson>(row.events);
  const keys = await keysFor(decoder, rows.map((item) => item[6]), db);
  const events = decodeEvents(rows, handled, decoder, keys);
  if (events.length !== row.n) throw new Error(`a batch of ${row.n} events decoded to ${events.length}`);
  const ledger = new Map<number, Record<string, string>>();
  let positions: Map<string, number> | undefined;
  for (const [event, typeIndex, state] of parseJsonItems<LedgerJson>(row.ledger)) {
    const position = typeof event === 'number' ? event : (positions ??= new Map(events.map((e) => [e.id, e.position]))).get(event);
    if (position === undefined) continue;
    const effectType = applied[typeIndex]!;
    const entries = ledger.get(position);
    if (entries) entries[effectType] = state;
    else ledger.set(position, { [effectType]: state });
  }
  return { events: inLogOrder(events), ledger };
}

/**
 * The events in log order. The SQL aggregates them in the order of the CTE that read them, which
 * PostgreSQL keeps without promising it: checked here, in one pass, rather than sorted there.
 */
export function inLogOrder<Event extends LogCheckpoint>(events: Event[]): Event[] {
  for (let i = 1; i < events.length; i++) {
    if (!isAfter(events[i]!, events[i - 1]!)) return events.sort((a, b) => a.txOrder - b.txOrder || a.position - b.position);
  }
  return events;
}

/**
 * The batch's events, their data decoded as every read decodes it (store/decode.ts). An event
 * whose data cannot be decoded keeps its stored data and the reason, and the run parks it.
 */
function decodeEvents(rows: RunEventJson[], handled: readonly string[], decoder: EventDecoder, keys: BatchKeys): PartitionedEvent[] {
  const events = new Array<PartitionedEvent>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const [position, txOrder, streamId, streamVersion, id, typeOrIndex, stored, metadata, occurredMs, recordedMs, partition, schemaVersion] = rows[i]!;
    // JSON numbers beyond 2^53 would be rounded silently; the log's never get there, but say so if they do.
    if (!Number.isSafeInteger(position) || !Number.isSafeInteger(txOrder)) throw new RangeError('event position exceeds Number.MAX_SAFE_INTEGER');
    const type = typeof typeOrIndex === 'number' ? handled[typeOrIndex]! : typeOrIndex;
    const occurredAt = new Date(occurredMs);
    let data = stored;
    let undecodable: RastroError | undefined;
    try {
      data = decodeData({ id, type, streamId, occurredAt, data: stored, schemaVersion }, decoder, keys);
    } catch (err) {
      undecodable = err as RastroError;
    }
    events[i] = { id, streamId, streamVersion, position, txOrder, type, data, metadata, occurredAt, recordedAt: new Date(recordedMs), partition, ...(undecodable ? { undecodable } : {}) };
  }
  return events;
}

/** The next events of a run's range after `after`, never skipping a committed one. */
export async function readRunBatch(
  run: RunContext,
  range: RunRange,
  after: LogCheckpoint,
  limit: number,
  options: {
    /** Only the streams of these partitions. */
    partitions?: { count: number; owned: number[] };
    /** Events to skip first: a read ahead of one for `limit` events after the same checkpoint. */
    offset?: number;
    /** Projections whose rows the events wrote last come with them. */
    preload?: readonly string[];
  } = {},
): Promise<RunEvents> {
  const { partitions, offset = 0, preload = [] } = options;
  const { db, sql } = run;
  const handled = handledTypes(run.processor);
  const applied = appliedTypes(run.policy);
  const values = [
    after.txOrder, after.position, limit, handled, ...rangeValues(range),
    partitions?.count ?? 1, partitions?.owned ?? null, applied, run.runId, offset, preload,
  ];
  // Not prepared, as the probe: the effect ledger it joins grows from empty during a first run.
  const { rows } = await db.query<RunEventsRow & { blocked: string[]; held: boolean; frontier: number; stored: string | null }>(sql.readBatch, values);
  const row = rows[0]!;
  return {
    ...(await decode(db, row, handled, applied, run.decoder ?? {})),
    blocked: new Set(row.blocked),
    heldBack: row.held,
    frontier: row.frontier,
    stored: row.stored === null ? undefined : parseJsonItems<PreloadedRow>(row.stored),
  };
}

/** Events by id, in log order, as a run reads them, none blocked: for re-running parked events. */
export async function readRunEvents(run: RunContext, ids: string[]): Promise<RunEvents> {
  const handled = handledTypes(run.processor);
  const applied = appliedTypes(run.policy);
  const { rows } = await run.db.query<RunEventsRow>(run.sql.eventsByIds, [ids, applied, handled]);
  return { ...(await decode(run.db, rows[0]!, handled, applied, run.decoder ?? {})), blocked: new Set() };
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
