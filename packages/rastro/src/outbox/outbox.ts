import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/database.js';
import { toQueryable, type Executor } from '../db/executor.js';
import { int8 } from '../db/values.js';
import { quoteSchema } from '../db/schema-name.js';
import { ValidationError } from '../errors.js';
import { findUnstorableText } from '../store/storable-text.js';
import { injectTraceContext } from '../observability/trace-context.js';
import { createAppendNotifier } from '../store/append-notifier.js';
import { outboxSql } from './sql.js';

/** A message to publish, written in the caller's transaction. */
export interface OutboxMessage {
  /** Letters, digits, `_` and `-`: it is a subject token and a routing key word. */
  aggregateType: string;
  aggregateId: string;
  type: string;
  /** Any JSON value. */
  payload: unknown;
  /** Strings only; names of letters, digits, `_` and `-`. */
  headers?: Record<string, string>;
  /** A UUID, stable across republishes, for deduplication downstream. @defaultValue a new one */
  id?: string;
  /** The W3C trace context of the work that wrote it. @defaultValue the active span's, when there is one */
  traceparent?: string;
}

export interface Outbox {
  /**
   * Writes a message in `tx`, the caller's transaction (`db.transaction`'s, a `pg` client inside
   * `begin`, or a query builder's through `fromKysely`, `fromDrizzle` or `fromKnex`): it is
   * published if and only if that transaction commits. Messages of one aggregate reach the broker in
   * commit order.
   */
  write(tx: Executor, message: OutboxMessage): Promise<{ id: string; position: number }>;
  readonly schema: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const AGGREGATE_TYPE = /^[A-Za-z0-9_-]{1,100}$/;
const HEADER_NAME = /^[A-Za-z0-9_-]{1,100}$/;
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const PRINTABLE = /^[^\s\u0000-\u001f\u007f]+$/;

/** The channel outbox writes notify relays on, one per schema. */
export function outboxChannel(schema: string): string {
  return `rastro_outbox_${schema}`;
}

function jsonText(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    throw new ValidationError('payload', 'must be serializable as JSON (no cycles, no BigInt)');
  }
  if (text === undefined) throw new ValidationError('payload', 'must be a JSON value');
  const unstorable = findUnstorableText(value, 'payload');
  if (unstorable) throw new ValidationError(unstorable.field, unstorable.reason);
  return text;
}

function validateHeaders(headers: unknown): string {
  if (headers === undefined) return '{}';
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) throw new ValidationError('headers', 'must be an object of strings');
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) throw new ValidationError(`headers.${name}`, 'names must be letters, digits, _ or -');
    if (typeof value !== 'string' || /[\r\n\u0000]/.test(value)) throw new ValidationError(`headers.${name}`, 'must be a string without line breaks');
  }
  return JSON.stringify(headers);
}

/** Checks a message and returns the write statement's values after the aggregate. */
export function prepareOutboxMessage(message: OutboxMessage): unknown[] {
  if (typeof message !== 'object' || message === null) throw new ValidationError('message', 'must be an object');
  const { aggregateType, aggregateId, type, id, traceparent } = message;
  if (typeof aggregateType !== 'string' || !AGGREGATE_TYPE.test(aggregateType)) throw new ValidationError('aggregateType', 'must be 1 to 100 letters, digits, _ or -');
  if (typeof aggregateId !== 'string' || aggregateId.length === 0 || aggregateId.length > 500) throw new ValidationError('aggregateId', 'must be a string of 1 to 500 characters');
  if (typeof type !== 'string' || type.length > 200 || !PRINTABLE.test(type)) throw new ValidationError('type', 'must be 1 to 200 characters, no spaces or control characters');
  if (id !== undefined && (typeof id !== 'string' || !UUID.test(id))) throw new ValidationError('id', 'must be a UUID');
  if (traceparent !== undefined && (typeof traceparent !== 'string' || !TRACEPARENT.test(traceparent))) {
    throw new ValidationError('traceparent', 'must be a W3C traceparent, e.g. 00-<32 hex>-<16 hex>-01');
  }
  return [aggregateType, aggregateId, id ?? randomUUID(), type, jsonText(message.payload), validateHeaders(message.headers), traceparent ?? null];
}

/**
 * A message's values for {@link outboxWriteCtes}, checked, with the active trace context as
 * `write` adds it: for a statement of the caller's that writes the message with its own rows.
 */
export function outboxMessageValues(message: OutboxMessage): unknown[] {
  return prepareOutboxMessage(withActiveTrace(message));
}

/** The message with the active trace context, unless it names its own `traceparent`. */
function withActiveTrace(message: OutboxMessage): OutboxMessage {
  if (typeof message !== 'object' || message === null || message.traceparent !== undefined) return message;
  const { traceparent, tracestate } = injectTraceContext({});
  if (traceparent === undefined) return message;
  const headers: unknown = message.headers;
  const plain = headers === undefined || (typeof headers === 'object' && headers !== null && !Array.isArray(headers) && !('tracestate' in headers));
  return { ...message, traceparent, ...(tracestate !== undefined && plain ? { headers: { ...message.headers, tracestate } } : {}) };
}

/**
 * The transactional outbox: rows written in your own transaction, published by a relay
 * ({@link runRelay}) after it commits. No window where one happens without the other.
 *
 * @example
 * ```ts
 * const outbox = createOutbox(db)
 * await db.transaction(async (tx) => {
 *   await tx.query('insert into charges (id, status) values ($1, $2)', [id, 'PENDING'])
 *   await outbox.write(tx, { aggregateType: 'charge', aggregateId: id, type: 'ChargeStarted', payload: { id } })
 * })
 * ```
 */
export function createOutbox(db: Database, options: { schema?: string } = {}): Outbox {
  const schema = options.schema ?? 'rastro';
  const sql = outboxSql(quoteSchema(schema));
  // One notification per commit, sent after it: a NOTIFY inside the transaction would hold the
  // notification queue's lock through the commit's flush. Unthrottled: a relay's latency is its wake-up.
  const notifier = createAppendNotifier(db, outboxChannel(schema), 0);
  return {
    schema,
    async write(executor, message) {
      if (!executor || typeof (executor as Queryable).query !== 'function') throw new ValidationError('tx', "must be the transaction to write in: db.transaction's tx, a pg client inside begin, or fromKysely/fromDrizzle/fromKnex of a query builder's transaction");
      const tx = toQueryable(executor);
      const values = outboxMessageValues(message);
      const { rows } = await tx.query<{ position: number }>(sql.write, values, { prepare: true });
      // The notification goes out when, and only if, the transaction commits.
      await notifier.appendedIn(tx);
      return { id: values[2] as string, position: int8(rows[0]!.position) };
    },
  };
}
