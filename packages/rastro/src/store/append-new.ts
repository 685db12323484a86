import type { Queryable } from '../db/database.js';
import { ConcurrencyError, ValidationError } from '../errors.js';
import { withSpan } from '../observability/tracing.js';
import type { NewEvent } from './event.js';
import type { EventStoreSql } from './sql.js';
import { withTraceMetadata } from './trace-metadata.js';
import { validateExpectedVersion, validateStreamId, type PreparedEvent } from './validate-append.js';
import { int8, int8Array } from '../db/values.js';

/** A statement of the caller's, run in the same statement as an append: see {@link appendNew}. */
export interface AlsoStatement {
  /**
   * An INSERT or UPDATE (a data-modifying statement that may stand in a WITH clause) that selects
   * from `stream`, which holds one row when the events were appended and none otherwise, so it
   * writes only with them. Its values are `$11`, `$12`, … Tables are named with their schema.
   */
  text: string;
  values: readonly unknown[];
}

export interface AppendNewResult {
  streamVersion: number;
  positions: number[];
  /** The stream's head after the append: its last event's trail link, in hex (see {@link ExpectedStream}). */
  head: string;
}

/**
 * Where the caller holds the stream: its version and, to tell that history from another one
 * written at the same versions, its head (the `head` of an append's result or of
 * `readStreamTail`). A standby promoted behind its primary lost the primary's last appends; new
 * ones may take their versions again, and only the head tells them apart.
 */
export interface ExpectedStream {
  version: number;
  head: string | null;
}

interface AppendNewContext {
  db: Queryable;
  sql: EventStoreSql;
  /** The store's preparation of new events: checked against its types, personal fields sealed, versions stamped. */
  prepare(events: NewEvent[]): Promise<PreparedEvent[]>;
  streamVersion(streamId: string): Promise<number>;
  /** After the statement committed, with the appended events' types. */
  appended(types: readonly string[]): void;
}

const HEAD = /^[0-9a-f]{64}$/;

/** The statement texts, one per caller's statement (a handful: they are constants of their modules). */
const texts = new WeakMap<EventStoreSql, Map<string, string>>();

function textOf(sql: EventStoreSql, one: boolean, also: string | undefined): string {
  let known = texts.get(sql);
  if (!known) texts.set(sql, (known = new Map()));
  const key = `${one ? 1 : 'n'}:${also ?? ''}`;
  let text = known.get(key);
  if (text === undefined) known.set(key, (text = sql.appendNew(one, also)));
  return text;
}

/**
 * Appends new events at exactly `expectedVersion` in one statement and one commit, with `also`
 * in the same statement when given: a row that must exist if and only if the events do (an
 * idempotency key's stored response, say). A single event's columns go as scalars. Throws
 * {@link ConcurrencyError} when the stream is at another version (nothing is written), and the
 * database's error when `also` fails (a unique violation), which undoes the append. For new
 * events only: a retry of events already appended is not recognized as one, as `append` does.
 */
export function appendNew(context: AppendNewContext, streamId: string, events: NewEvent[], expectedVersion: number | ExpectedStream, also?: AlsoStatement): Promise<AppendNewResult> {
  const attributes = { 'rastro.stream.id': String(streamId).slice(0, 500), 'rastro.event.count': Array.isArray(events) ? events.length : 0 };
  return withSpan('rastro.append', attributes, async (span, ctx) => {
    if (span.isRecording() && attributes['rastro.event.count'] > 0) span.setAttribute('rastro.event.types', events.map((event) => String(event?.type)));
    validateStreamId(streamId);
    const held = typeof expectedVersion === 'object' && expectedVersion !== null ? expectedVersion : { version: expectedVersion, head: null };
    const expected = validateExpectedVersion(held.version);
    if (typeof expected !== 'number' || expected < 1) throw new ValidationError('expectedVersion', 'must be the version of an existing stream');
    const head = held.head ?? null;
    if (head !== null && (typeof head !== 'string' || !HEAD.test(head))) throw new ValidationError('expectedVersion.head', 'must be a stream head as an append or readStreamTail returned it: 64 hexadecimal digits');
    if (also !== undefined && (typeof also?.text !== 'string' || !Array.isArray(also.values))) throw new ValidationError('also', 'must be a statement { text, values }');
    const prepared = await context.prepare(withTraceMetadata(events, ctx));
    const one = prepared.length === 1;
    const column = <K extends keyof (typeof prepared)[number]>(key: K) => (one ? prepared[0]![key] : prepared.map((event) => event[key]));
    const values = [streamId, column('id'), column('type'), column('data'), column('metadata'), column('occurredAt'), prepared.length, column('schemaVersion'), expected, head, ...(also?.values ?? [])];
    const { rows } = await context.db.query<{ stream_version: unknown; positions: unknown; head: string }>(textOf(context.sql, one, also?.text), values, { prepare: true });
    const row = rows[0]!;
    if (row.stream_version === null || row.positions === null) throw new ConcurrencyError(streamId, expected, await context.streamVersion(streamId));
    context.appended(prepared.map((event) => event.type));
    const result = { streamVersion: int8(row.stream_version), positions: int8Array(row.positions), head: row.head };
    if (span.isRecording()) span.setAttributes({ 'rastro.stream.version': result.streamVersion, 'rastro.positions': result.positions });
    return result;
  });
}
