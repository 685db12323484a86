import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Database, Queryable } from '../db/database.js';
import { isUniqueViolation } from '../db/database-error.js';
import { inCallersTransaction, isPgPool, toQueryable, type Executor } from '../db/executor.js';
import { openPostgres, type PgPool } from '../db/postgres.js';
import { quoteSchema } from '../db/schema-name.js';
import { int8, int8Array } from '../db/values.js';
import { ConcurrencyError, ConfigError, EventIdConflictError, TransactionIdsRewoundError, ValidationError, type ExpectedVersion } from '../errors.js';
import { decodeEvent, keysFor, type EventDecoder } from './decode.js';
import { encryptPersonal, masterKey, subjectKeys, subjectOf, type SubjectKeys } from './personal-data.js';
import { LOG_START, toStoredEvent, type EventMetadata, type EventRow, type LogCheckpoint, type NewEvent, type RecordedEvent } from './event.js';
import type { AnyEvents, EventMap, EventTypes } from './event-types.js';
import { readStreamTail, saveSnapshot, snapshotSql, type Snapshot, type StreamTail } from './snapshots.js';
import { eventStoreSql } from './sql.js';
import { createAppendNotifier } from './append-notifier.js';
import { appendNew, type AlsoStatement, type AppendNewResult, type ExpectedStream } from './append-new.js';
import { eventsChannel, subscribeToLog, type Subscription, type SubscribeOptions } from './subscribe.js';
import { prepareEvents, validateExpectedVersion, validateStreamId, type PreparedEvent } from './validate-append.js';
import { withSpan } from '../observability/tracing.js';
import { withoutTraceContext, withTraceMetadata } from './trace-metadata.js';

export interface EventStoreOptions<E extends EventMap = AnyEvents> {
  /** @defaultValue 'rastro' */
  schema?: string;
  /**
   * The store's event types ({@link defineEvents}). Appends are then typed, checked against
   * their types' schemas and stamped with their types' versions; reads return only these types,
   * typed, their data brought to each type's current version. @defaultValue any type, untyped
   */
  events?: EventTypes<E>;
  /**
   * The master key (32 bytes, or their hex or base64 text) that wraps each data subject's key,
   * for event types with personal fields: their fields are stored encrypted, and `forget` erases
   * them. Required when a type declares personal fields.
   */
  personalData?: { masterKey: Buffer | string };
}

export interface AppendOptions {
  /** @defaultValue 'any' */
  expectedVersion?: ExpectedVersion;
  /**
   * Append inside the caller's transaction, so the events commit with the caller's rows (or not
   * at all): `db.transaction`'s `tx`, a `pg` client inside `begin` (a `PoolClient` or `Client`),
   * or a query builder's transaction through `fromKysely`, `fromDrizzle` or `fromKnex`. A version
   * conflict inside it is contained in a savepoint: the transaction stays usable.
   */
  tx?: Executor;
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
  /** Read inside the caller's transaction (see {@link AppendOptions.tx}). */
  tx?: Executor;
}

export interface ReadAllOptions<E extends EventMap = AnyEvents> {
  /** Read events after this checkpoint; a recorded event is one. @defaultValue the start */
  after?: LogCheckpoint;
  /** @defaultValue 1000 */
  limit?: number;
  /** Only these event types. @defaultValue the store's declared types, or every type */
  types?: (keyof E & string)[];
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

export interface EventStore<E extends EventMap = AnyEvents> {
  append(streamId: string, events: readonly NewEvent<E>[], options?: AppendOptions): Promise<AppendResult>;
  /**
   * New events at exactly `expectedVersion` (with its head, when the caller holds one), and
   * optionally a row of the caller's, in one statement: see {@link appendNew}.
   */
  appendNew(streamId: string, events: readonly NewEvent<E>[], expectedVersion: number | ExpectedStream, also?: AlsoStatement): Promise<AppendNewResult>;
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent<E>[]>;
  readAll(options?: ReadAllOptions<E>): Promise<RecordedEvent<E>[]>;
  subscribe(after: LogCheckpoint, handler: (event: RecordedEvent<E>) => Promise<void> | void, options?: SubscribeOptions): Subscription;
  /**
   * The stream's latest snapshot and the events after it (all events when there is none); with
   * `afterVersion`, for a reader that holds the state at that version, only what is newer.
   */
  readStreamTail<State>(streamId: string, options?: { tx?: Executor; afterVersion?: number }): Promise<StreamTail<State>>;
  /** Saves a snapshot unless a newer one is stored. Snapshots are derived: events stay the truth. */
  saveSnapshot(streamId: string, snapshot: Snapshot<unknown>, options?: { tx?: Executor }): Promise<void>;
  /** Deletes the snapshots of every stream whose id starts with `prefix`; returns how many. */
  dropSnapshots(prefix: string): Promise<number>;
  /** Streams whose id starts with `prefix`, in id order, `limit` at a time after `afterStreamId`. */
  listStreams(prefix: string, options?: { afterStreamId?: string; limit?: number }): Promise<{ streamId: string; version: number }[]>;
  /** The stream's version, 0 when it does not exist. */
  streamVersion(streamId: string, options?: { tx?: Executor }): Promise<number>;
  readerDelay(): Promise<ReaderDelay>;
  /** Throws {@link TransactionIdsRewoundError} when the log came from another cluster. */
  assertTransactionIdsCurrent(): Promise<void>;
  /** After a restore into another cluster: makes new appends sort after every recorded event. */
  rebaseTransactionOrder(): Promise<number>;
  readonly schema: string;
  readonly db: Database;
  /** The declared event types, when the store was given them. */
  readonly events: EventTypes<E> | undefined;
  /** What decodes its events on every read path: its types' upcasters, its data subjects' keys. */
  readonly decoder: EventDecoder;
  /**
   * Forgets a data subject: deletes its key, so its personal fields read as null everywhere from
   * now on, refuses its new personal data, and appends `rastro.subject.forgotten` to stream
   * `forgotten:<subject>` — in one transaction. No event is updated: the trail still verifies.
   */
  forget(subject: string): Promise<{ hadKey: boolean; eventId: string }>;
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

function validateTypes(types: unknown, declared: EventTypes | undefined): string[] | null {
  if (types === undefined) return declared ? declared.names : null;
  if (!Array.isArray(types) || types.some((type) => typeof type !== 'string')) throw new ValidationError('types', 'must be an array of strings');
  return types as string[];
}

/** The type of the event `forget` appends. */
export const FORGOTTEN = 'rastro.subject.forgotten';

/**
 * The events with their personal fields sealed under their subjects' keys (made for new
 * subjects; a forgotten subject is refused), in the append's transaction when it has one.
 */
async function sealPersonal(types: EventTypes, keys: SubjectKeys, events: NewEvent[], tx: Queryable | undefined): Promise<NewEvent[]> {
  if (!Array.isArray(events)) return events;
  const subjects = new Map<number, string>();
  events.forEach((event, index) => {
    const personal = typeof event?.type === 'string' ? types.personal(event.type) : undefined;
    if (personal && typeof event.data === 'object' && event.data !== null) subjects.set(index, subjectOf(event.data, personal, `events[${index}].data`));
  });
  if (subjects.size === 0) return events;
  const written = await keys.forWriting(subjects.values(), tx);
  return events.map((event, index) => {
    const subject = subjects.get(index);
    if (subject === undefined) return event;
    // The id is the sealing's: made here when the caller gave none.
    const id = typeof event.id === 'string' ? event.id : randomUUID();
    return { ...event, id, data: encryptPersonal(event.data, types.personal(event.type)!, subject, written.get(subject)!, id) };
  });
}

/**
 * The events with their data checked against their types' schemas (the schemas' output is what
 * is stored), refusing a type the store does not declare. What is not an event at all is left
 * for {@link prepareEvents} to refuse.
 */
async function checkedAgainst(types: EventTypes, events: readonly NewEvent[]): Promise<NewEvent[]> {
  if (!Array.isArray(events)) return events as NewEvent[];
  return Promise.all(events.map(async (event, index) => {
    if (typeof event !== 'object' || event === null || typeof event.type !== 'string' || typeof event.data !== 'object' || event.data === null) return event;
    if (!types.has(event.type)) throw new ValidationError(`events[${index}].type`, `${JSON.stringify(event.type.slice(0, 200))} is not one of the store's event types (${types.names.join(', ')})`);
    return { ...event, data: (await types.validate(event.type, event.data, `events[${index}].data`)) as Record<string, unknown> };
  }));
}

/**
 * Creates the event store on a migrated database.
 *
 * `db` is a database from {@link openDatabase}, or the application's own `pg` `Pool`.
 *
 * @example
 * ```ts
 * const store = createEventStore(db, { events: defineEvents<OrderEvents>({ 'order.paid': {} }) })
 * const { streamVersion } = await store.append('order-1', [{ type: 'order.paid', data: { amountCents: 1200 } }], { expectedVersion: 'no-stream' })
 * for (const event of await store.readAll({ after: LOG_START, limit: 100 })) console.log(event.type)
 * ```
 */
export function createEventStore<E extends EventMap = AnyEvents>(database: Database | PgPool, options: EventStoreOptions<E> = {}): EventStore<E> {
  const db = isPgPool(database) ? openPostgres({ pool: database }) : database;
  const schema = options.schema ?? 'rastro';
  const types = options.events as EventTypes | undefined;
  if (types?.hasPersonal && !options.personalData) throw new ConfigError('the store\'s event types declare personal fields: give personalData.masterKey (RASTRO_MASTER_KEY_FILE for the server)');
  const keys = options.personalData ? subjectKeys(db, schema, masterKey(options.personalData.masterKey)) : undefined;
  const decoder: EventDecoder = { types, keys };
  const quoted = quoteSchema(schema);
  const sql = eventStoreSql(quoted);
  const snapshots = snapshotSql(quoted);
  const notifier = createAppendNotifier(db, eventsChannel(schema));

  async function streamVersion(streamId: string, target: Queryable = db): Promise<number> {
    const { rows } = await target.query<{ version: unknown }>(sql.streamVersion, [streamId], { prepare: true });
    return rows[0] ? int8(rows[0].version) : 0;
  }

  function appendText(expected: ExpectedVersion): { text: string; extra: unknown[] } {
    if (expected === 'any') return { text: sql.append.any, extra: [] };
    if (expected === 'no-stream' || expected === 0) return { text: sql.append.noStream, extra: [] };
    if (expected === 'exists') return { text: sql.append.exists, extra: [] };
    return { text: sql.append.exact, extra: [expected] };
  }

  /** A single event at an exact version: its columns as scalars, its link computed once, by itself. */
  const appendOneExact = sql.appendNew(true);

  async function runAppend(target: Queryable, streamId: string, events: PreparedEvent[], expected: ExpectedVersion) {
    if (events.length === 1 && typeof expected === 'number' && expected > 0) {
      const [event] = events as [PreparedEvent];
      const values = [streamId, event.id, event.type, event.data, event.metadata, event.occurredAt, 1, event.schemaVersion, expected, null];
      return (await target.query<{ stream_version: unknown; positions: unknown }>(appendOneExact, values, { prepare: true })).rows[0]!;
    }
    const { text, extra } = appendText(expected);
    const { rows } = await target.query<{ stream_version: unknown; positions: unknown }>(
      text,
      [
      streamId,
      events.map((event) => event.id),
      events.map((event) => event.type),
      events.map((event) => event.data),
      events.map((event) => event.metadata),
      events.map((event) => event.occurredAt),
      events.length,
      events.map((event) => event.schemaVersion),
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
    const stored = new Map(rows.map((row) => [row.id, toStoredEvent(row)]));
    for (const event of events) {
      const row = stored.get(event.id);
      if (!row) throw new EventIdConflictError(rows[0]!.id, 'but this append mixes it with new events');
      if (row.streamId !== streamId) throw new EventIdConflictError(event.id, 'in another stream');
      const same =
        row.type === event.type &&
        row.schemaVersion === event.schemaVersion &&
        isDeepStrictEqual(row.data, JSON.parse(event.data)) &&
        isDeepStrictEqual(withoutTraceContext(row.metadata), withoutTraceContext(JSON.parse(event.metadata) as EventMetadata)) &&
        (!event.occurredAtGiven || row.occurredAt.toISOString() === event.occurredAt);
      if (!same) throw new EventIdConflictError(event.id, 'with other content');
    }
    const inOrder = events.map((event) => stored.get(event.id)!);
    if (inOrder.some((row, i) => i > 0 && row.streamVersion !== inOrder[i - 1]!.streamVersion + 1)) {
      throw new EventIdConflictError(events[0]!.id, 'in another order');
    }
    return { streamVersion: inOrder[inOrder.length - 1]!.streamVersion, positions: inOrder.map((row) => row.position) };
  }

  /**
   * Appends, or explains why nothing was appended: a retry of events already in the log (then
   * the first result), or a version conflict. A retry that reaches the events insert fails on
   * their unique id; inside a caller's transaction that needs a rollback to the savepoint first.
   */
  async function appendIn(target: Queryable, streamId: string, events: PreparedEvent[], expected: ExpectedVersion, savepoint: boolean): Promise<AppendResult> {
    try {
      const row = await runAppend(target, streamId, events, expected);
      if (row.stream_version !== null && row.positions !== null) return { streamVersion: int8(row.stream_version), positions: int8Array(row.positions) };
    } catch (err) {
      if (!isUniqueViolation(err, 'events_id_key')) throw err;
      if (savepoint) await target.query('rollback to savepoint rastro_append');
    }
    return explainRefusal(target, streamId, events, expected);
  }

  /** Appends in a `rastro.append` span; the events carry its trace context in their metadata. */
  function append(streamId: string, events: readonly NewEvent[], options: AppendOptions = {}): Promise<AppendResult> {
    const attributes = { 'rastro.stream.id': String(streamId).slice(0, 500), 'rastro.event.count': Array.isArray(events) ? events.length : 0 };
    return withSpan('rastro.append', attributes, async (span, ctx) => {
      if (span.isRecording() && attributes['rastro.event.count'] > 0) span.setAttribute('rastro.event.types', events.map((event) => String(event?.type)));
      const result = await appendTraced(streamId, withTraceMetadata(events as NewEvent[], ctx), options);
      if (span.isRecording()) span.setAttributes({ 'rastro.stream.version': result.streamVersion, 'rastro.positions': result.positions });
      return result;
    });
  }

  /** New events as the append statements take them: checked against the types, personal fields sealed, versions stamped. */
  async function prepareNew(events: NewEvent[], tx?: Queryable): Promise<PreparedEvent[]> {
    const checked = types ? await checkedAgainst(types, events) : events;
    return prepareEvents(types?.hasPersonal ? await sealPersonal(types, keys!, checked, tx) : checked, types);
  }

  async function appendTraced(streamId: string, events: NewEvent[], options: AppendOptions): Promise<AppendResult> {
    validateStreamId(streamId);
    const expected = validateExpectedVersion(options.expectedVersion ?? 'any');
    const tx = options.tx === undefined ? undefined : toQueryable(options.tx);
    const prepared = await prepareNew(events, tx);
    if (!tx || !inCallersTransaction(tx)) {
      // One statement, its own transaction: nothing of the caller's to keep usable.
      const result = await appendIn(tx ?? db, streamId, prepared, expected, false);
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

  async function decode(rows: EventRow[], target: Queryable = db): Promise<RecordedEvent<E>[]> {
    const stored = rows.map(toStoredEvent);
    const batchKeys = await keysFor(decoder, stored.map((event) => event.data), target);
    return stored.map((event) => decodeEvent<E>(event, decoder, batchKeys));
  }

  async function readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent<E>[]> {
    validateStreamId(streamId);
    const from = validateVersion('fromVersion', options.fromVersion, 1);
    const to = validateVersion('toVersion', options.toVersion, Number.MAX_SAFE_INTEGER);
    const target = options.tx === undefined ? db : toQueryable(options.tx);
    const { rows } = await target.query<EventRow>(sql.readStream, [streamId, from, to, null, types?.names ?? null], { prepare: true });
    return decode(rows, target);
  }

  async function readAll(options: ReadAllOptions<E> = {}): Promise<RecordedEvent<E>[]> {
    const after = validateCheckpoint(options.after);
    const limit = validateLimit(options.limit, 1000);
    const values = [after.txOrder, after.position, limit, validateTypes(options.types, types), validateDate('from', options.from), validateDate('to', options.to)];
    const { rows } = await db.query<EventRow>(sql.readAll, values);
    return decode(rows);
  }

  const executor = (tx: Executor | undefined): Queryable => (tx === undefined ? db : toQueryable(tx));

  const store: EventStore<E> = {
    schema,
    db,
    events: options.events,
    decoder,
    async forget(subject) {
      if (typeof subject !== 'string' || subject.length === 0 || subject.length > 200) throw new ValidationError('subject', 'must be a data subject\'s id, a string of 1 to 200 characters');
      if (!keys) throw new ConfigError('forgetting a subject needs the store\'s personalData.masterKey (RASTRO_MASTER_KEY_FILE for the server)');
      return db.transaction(async (tx) => {
        const hadKey = await keys.forget(subject, tx);
        const [event] = prepareEvents([{ type: FORGOTTEN, data: { subject }, metadata: {} }]);
        await appendIn(tx, `forgotten:${subject}`, [event!], 'any', false);
        await notifier.appendedIn(tx, [FORGOTTEN]);
        return { hadKey, eventId: event!.id };
      });
    },
    // The implementation reads and writes untyped events; the store's type is the caller's view of them.
    append: append as EventStore<E>['append'],
    appendNew: ((streamId: string, events: readonly NewEvent[], expectedVersion: number | ExpectedStream, also?: AlsoStatement) =>
      appendNew({ db, sql, prepare: (batch) => prepareNew(batch), streamVersion: (id) => streamVersion(id), appended: notifier.appended }, streamId, events as NewEvent[], expectedVersion, also)) as EventStore<E>['appendNew'],
    readStream,
    readAll,
    subscribe: (after, handler, subscribeOptions) =>
      subscribeToLog({
        db, schema, read: (from, limit) => readAll({ after: from, limit }) as Promise<RecordedEvent[]>, after: validateCheckpoint(after),
        handler: handler as (event: RecordedEvent) => Promise<void> | void, options: subscribeOptions,
      }),
    streamVersion: (streamId, { tx } = {}) => streamVersion(validateStreamId(streamId), executor(tx)),
    readStreamTail: (streamId, { tx, afterVersion } = {}) =>
      readStreamTail(executor(tx), snapshots, validateStreamId(streamId), decoder, afterVersion === undefined ? undefined : validateVersion('afterVersion', afterVersion, 0)),
    saveSnapshot: (streamId, snapshot, { tx } = {}) => saveSnapshot(executor(tx), snapshots, validateStreamId(streamId), snapshot),
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
