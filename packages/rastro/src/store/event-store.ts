import { isDeepStrictEqual } from 'node:util';
import type { Database, Queryable } from '../db/database.js';
import { isUniqueViolation } from '../db/database-error.js';
import { quoteSchema } from '../db/schema-name.js';
import { ConcurrencyError, EventIdConflictError, TransactionIdsRewoundError, ValidationError, type ExpectedVersion } from '../errors.js';
import { LOG_START, toRecordedEvent, type EventMetadata, type EventRow, type LogCheckpoint, type NewEvent, type RecordedEvent } from './event.js';
import { readStreamTail, saveSnapshot, snapshotSql, type Snapshot, type StreamTail } from './snapshots.js';
import { eventStoreSql } from './sql.js';
import { createAppendNotifier } from './append-notifier.js';
import { appendNew, type AlsoStatement } from './append-new.js';
import { eventsChannel, subscribeToLog, type Subscription, type SubscribeOptions } from './subscribe.js';
import { prepareEvents, validateExpectedVersion, validateStreamId, type PreparedEvent } from './validate-append.js';
import { withSpan } from '../observability/tracing.js';
import { withoutTraceContext, withTraceMetadata } from './trace-metadata.js';

export interface EventStoreOptions {
  /** @defaultValue 'rastro' */
  schema?: string;
}

export interface AppendOptions {
  /** @defaultValue 'any' */
  expectedVersion?: ExpectedVersion;
  /** Append inside the caller's transaction, so the events commit with the caller's rows. */
  tx?: Queryable;
}

export interface AppendResult {
  /** The stream's version after the append: the version of its last event. */
  streamVersion: number;
  /** The global positions of the appended events, in order. */
  positions: number[];
}

export interface ReadStreamOptions {
  /** @defaultValue 1 */
  fromVersion?: number;
  /** Inclusive. @defaultValue the stream's end */
  toVersion?: number;
  /** Read inside the caller's transaction. */
  tx?: Queryable;
}

export interface ReadAllOptions {
  /** Read events after this checkpoint; a recorded event is one. @defaultValue the start */
  after?: LogCheckpoint;
  /** @defaultValue 1000 */
  limit?: number;
  /** Only these event types. */
  types?: string[];
  /** Only events that occurred at or after this time. */
  from?: Date;
  /** Only events that occurred before this time. */
  to?: Date;
}

/** What holds a reader back: committed events it cannot deliver yet, and why. */
export interface ReaderDelay {
  /** Committed events above the oldest running transaction: readers will deliver them when it ends. */
  heldBack: number;
  /**
   * Age of the oldest transaction that holds a transaction id and may still append, in
   * milliseconds; null when none. One marked as appending nothing (a processor's batch writing its
   * rows) holds no reader back and is not counted.
   */
  oldestWriterMs: number | null;
  /** Age of the oldest prepared (two-phase) transaction, in milliseconds; null when none. */
  oldestPreparedMs: number | null;
}

export interface EventStore {
  append(streamId: string, events: NewEvent[], options?: AppendOptions): Promise<AppendResult>;
  /** New events at exactly `expectedVersion`, and optionally a row of the caller's, in one statement: see {@link appendNew}. */
  appendNew(streamId: string, events: NewEvent[], expectedVersion: number, also?: AlsoStatement): Promise<AppendResult>;
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  subscribe(after: LogCheckpoint, handler: (event: RecordedEvent) => Promise<void> | void, options?: SubscribeOptions): Subscription;
  /**
   * The stream's latest snapshot and the events after it (all events when there is none); with
   * `afterVersion`, for a reader that holds the state at that version, only what is newer.
   */
  readStreamTail<State>(streamId: string, options?: { tx?: Queryable; afterVersion?: number }): Promise<StreamTail<State>>;
  /** Saves a snapshot unless a newer one is stored. Snapshots are derived: events stay the truth. */
  saveSnapshot(streamId: string, snapshot: Snapshot<unknown>, options?: { tx?: Queryable }): Promise<void>;
  /** Deletes the snapshots of every stream whose id starts with `prefix`; returns how many. */
  dropSnapshots(prefix: string): Promise<number>;
  /** Streams whose id starts with `prefix`, in id order, `limit` at a time after `afterStreamId`. */
  listStreams(prefix: string, options?: { afterStreamId?: string; limit?: number }): Promise<{ streamId: string; version: number }[]>;
  /** The stream's version, 0 when it does not exist. */
  streamVersion(streamId: string, options?: { tx?: Queryable }): Promise<number>;
  readerDelay(): Promise<ReaderDelay>;
  /** Throws {@link TransactionIdsRewoundError} when the log came from another cluster. */
  assertTransactionIdsCurrent(): Promise<void>;
  /** After a restore into another cluster: makes new appends sort after every recorded event. */
  rebaseTransactionOrder(): Promise<number>;
  readonly schema: string;
  readonly db: Database;
}

const MAX_READ_LIMIT = 10_000;

function validateLimit(limit: unknown, fallback: number): number {
  if (limit === undefined) return fallback;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_READ_LIMIT) {
    throw new ValidationError('limit', `must be an integer from 1 to ${MAX_READ_LIMIT}`);
  }
  return limit;
}

function validateVersion(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new ValidationError(field, 'must be a non-negative integer');
  return value;
}

function validateCheckpoint(after: unknown): LogCheckpoint {
  if (after === undefined) return LOG_START;
  const { txOrder, position } = (after ?? {}) as Partial<LogCheckpoint>;
  if (!Number.isSafeInteger(txOrder) || !Number.isSafeInteger(position)) {
    throw new ValidationError('after', 'must be a checkpoint { txOrder, position }, e.g. the last event read');
  }
  return { txOrder: txOrder as number, position: position as number };
}

function validateDate(field: string, value: unknown): string | null {
  if (value === undefined) return null;
  if (!(value instanceof Date) || !Number.isFinite(value.getTime())) throw new ValidationError(field, 'must be a valid Date');
  return value.toISOString();
}

function validateTypes(types: unknown): string[] | null {
  if (types === undefined) return null;
  if (!Array.isArray(types) || types.some((type) => typeof type !== 'string')) throw new ValidationError('types', 'must be an array of strings');
  return types as string[];
}

/**
 * Creates the event store on a migrated database.
 *
 * @example
 * ```ts
 * const store = createEventStore(db)
 * const { streamVersion } = await store.append('order-1', [{ type: 'order.paid', data: { amountCents: 1200 } }], { expectedVersion: 'no-stream' })
 * for (const event of await store.readAll({ after: LOG_START, limit: 100 })) console.log(event.type)
 * ```
 */
export function createEventStore(db: Database, options: EventStoreOptions = {}): EventStore {
  const schema = options.schema ?? 'rastro';
  const quoted = quoteSchema(schema);
  const sql = eventStoreSql(quoted);
  const snapshots = snapshotSql(quoted);
  const notifier = createAppendNotifier(db, eventsChannel(schema));

  async function streamVersion(streamId: string, target: Queryable = db): Promise<number> {
    const { rows } = await target.query<{ version: number }>(sql.streamVersion, [streamId], { prepare: true });
    return rows[0]?.version ?? 0;
  }

  function appendText(expected: ExpectedVersion): { text: string; extra: unknown[] } {
    if (expected === 'any') return { text: sql.append.any, extra: [] };
    if (expected === 'no-stream' || expected === 0) return { text: sql.append.noStream, extra: [] };
    if (expected === 'exists') return { text: sql.append.exists, extra: [] };
    return { text: sql.append.exact, extra: [expected] };
  }

  async function runAppend(target: Queryable, streamId: string, events: PreparedEvent[], expected: ExpectedVersion) {
    const { text, extra } = appendText(expected);
    const { rows } = await target.query<{ stream_version: number | null; positions: number[] | null }>(
      text,
      [
      streamId,
      events.map((event) => event.id),
      events.map((event) => event.type),
      events.map((event) => event.data),
      events.map((event) => event.metadata),
      events.map((event) => event.occurredAt),
      events.length,
      ...extra,
      ],
      { prepare: true },
    );
    return rows[0]!;
  }

  /** An append that wrote nothing: a retry of events already in the log, or a version conflict. */
  async function explainRefusal(target: Queryable, streamId: string, events: PreparedEvent[], expected: ExpectedVersion): Promise<AppendResult> {
    const { rows } = await target.query<EventRow>(sql.eventsById, [events.map((event) => event.id)]);
    if (rows.length === 0) throw new ConcurrencyError(streamId, expected, await streamVersion(streamId, target));
    const stored = new Map(rows.map((row) => [row.id, row]));
    for (const event of events) {
      const row = stored.get(event.id);
      if (!row) throw new EventIdConflictError(rows[0]!.id, 'but this append mixes it with new events');
      if (row.stream_id !== streamId) throw new EventIdConflictError(event.id, 'in another stream');
      const same =
        row.type === event.type &&
        isDeepStrictEqual(row.data, JSON.parse(event.data)) &&
        isDeepStrictEqual(withoutTraceContext(row.metadata), withoutTraceContext(JSON.parse(event.metadata) as EventMetadata)) &&
        (!event.occurredAtGiven || row.occurred_at.toISOString() === event.occurredAt);
      if (!same) throw new EventIdConflictError(event.id, 'with other content');
    }
    const inOrder = events.map((event) => stored.get(event.id)!);
    if (inOrder.some((row, i) => i > 0 && row.stream_version !== inOrder[i - 1]!.stream_version + 1)) {
      throw new EventIdConflictError(events[0]!.id, 'in another order');
    }
    return { streamVersion: inOrder[inOrder.length - 1]!.stream_version, positions: inOrder.map((row) => row.position) };
  }

  /**
   * Appends, or explains why nothing was appended: a retry of events already in the log (then
   * the first result), or a version conflict. A retry that reaches the events insert fails on
   * their unique id; inside a caller's transaction that needs a rollback to the savepoint first.
   */
  async function appendIn(target: Queryable, streamId: string, events: PreparedEvent[], expected: ExpectedVersion, savepoint: boolean): Promise<AppendResult> {
    try {
      const row = await runAppend(target, streamId, events, expected);
      if (row.stream_version !== null && row.positions) return { streamVersion: row.stream_version, positions: row.positions };
    } catch (err) {
      if (!isUniqueViolation(err, 'events_id_key')) throw err;
      if (savepoint) await target.query('rollback to savepoint rastro_append');
    }
    return explainRefusal(target, streamId, events, expected);
  }

  /** Appends in a `rastro.append` span; the events carry its trace context in their metadata. */
  function append(streamId: string, events: NewEvent[], options: AppendOptions = {}): Promise<AppendResult> {
    const attributes = { 'rastro.stream.id': String(streamId).slice(0, 500), 'rastro.event.count': Array.isArray(events) ? events.length : 0 };
    return withSpan('rastro.append', attributes, async (span, ctx) => {
      if (span.isRecording() && attributes['rastro.event.count'] > 0) span.setAttribute('rastro.event.types', events.map((event) => String(event?.type)));
      const result = await appendTraced(streamId, withTraceMetadata(events, ctx), options);
      if (span.isRecording()) span.setAttributes({ 'rastro.stream.version': result.streamVersion, 'rastro.positions': result.positions });
      return result;
    });
  }

  async function appendTraced(streamId: string, events: NewEvent[], options: AppendOptions): Promise<AppendResult> {
    validateStreamId(streamId);
    const expected = validateExpectedVersion(options.expectedVersion ?? 'any');
    const prepared = prepareEvents(events);
    const { tx } = options;
    if (!tx) {
      const result = await appendIn(db, streamId, prepared, expected, false);
      notifier.appended(prepared.map((event) => event.type));
      return result;
    }
    // In the caller's transaction a failed statement would abort all of its work: contain it.
    await tx.query('savepoint rastro_append');
    try {
      const result = await appendIn(tx, streamId, prepared, expected, true);
      await notifier.appendedIn(tx, prepared.map((event) => event.type));
      await tx.query('release savepoint rastro_append');
      return result;
    } catch (err) {
      await tx.query('rollback to savepoint rastro_append');
      throw err;
    }
  }

  async function readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    validateStreamId(streamId);
    const from = validateVersion('fromVersion', options.fromVersion, 1);
    const to = validateVersion('toVersion', options.toVersion, Number.MAX_SAFE_INTEGER);
    const { rows } = await (options.tx ?? db).query<EventRow>(sql.readStream, [streamId, from, to, null], { prepare: true });
    return rows.map(toRecordedEvent);
  }

  async function readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const after = validateCheckpoint(options.after);
    const limit = validateLimit(options.limit, 1000);
    const values = [after.txOrder, after.position, limit, validateTypes(options.types), validateDate('from', options.from), validateDate('to', options.to)];
    const { rows } = await db.query<EventRow>(sql.readAll, values);
    return rows.map(toRecordedEvent);
  }

  const store: EventStore = {
    schema,
    db,
    append,
    appendNew: (streamId, events, expectedVersion, also) =>
      appendNew({ db, sql, streamVersion: (id) => streamVersion(id), appended: notifier.appended }, streamId, events, expectedVersion, also),
    readStream,
    readAll,
    subscribe: (after, handler, subscribeOptions) =>
      subscribeToLog({ db, schema, read: (from, limit) => readAll({ after: from, limit }), after: validateCheckpoint(after), handler, options: subscribeOptions }),
    streamVersion: (streamId, { tx } = {}) => streamVersion(validateStreamId(streamId), tx),
    readStreamTail: (streamId, { tx, afterVersion } = {}) =>
      readStreamTail(tx ?? db, snapshots, validateStreamId(streamId), afterVersion === undefined ? undefined : validateVersion('afterVersion', afterVersion, 0)),
    saveSnapshot: (streamId, snapshot, { tx } = {}) => saveSnapshot(tx ?? db, snapshots, validateStreamId(streamId), snapshot),
    async dropSnapshots(prefix) {
      return (await db.query(snapshots.dropByPrefix, [prefix])).rowCount;
    },
    async listStreams(prefix, { afterStreamId = '', limit = 1000 } = {}) {
      const { rows } = await db.query<{ stream_id: string; version: number }>(snapshots.streamsByPrefix, [prefix, afterStreamId, validateLimit(limit, 1000)]);
      return rows.map((row) => ({ streamId: row.stream_id, version: row.version }));
    },
    async readerDelay() {
      const { rows } = await db.query<{ held_back: number; oldest_writer_ms: number | null; oldest_prepared_ms: number | null }>(sql.readerDelay);
      const row = rows[0]!;
      const ms = (value: number | null) => (value === null ? null : Math.round(Number(value)));
      return { heldBack: Number(row.held_back), oldestWriterMs: ms(row.oldest_writer_ms), oldestPreparedMs: ms(row.oldest_prepared_ms) };
    },
    async assertTransactionIdsCurrent() {
      const { rows } = await db.query<{ rewound: boolean }>(sql.rewound);
      if (rows[0]?.rewound) throw new TransactionIdsRewoundError(schema);
    },
    rebaseTransactionOrder: () =>
      db.transaction(async (tx) => {
        await tx.query(sql.rebase[0]);
        const { rows } = await tx.query<{ tx_order_offset: number }>(sql.rebase[1]);
        return rows[0]!.tx_order_offset;
      }),
  };
  return store;
}
