import { createHash } from 'node:crypto';
import { SpanKind, type Context, type Span } from '@opentelemetry/api';
import { decodeDelivery, type BrokerConsumer, type Delivery } from '../brokers/consumer.js';
import type { BrokerMessage } from '../brokers/message.js';
import { quoteSchema } from '../db/schema-name.js';
import { isDatabaseUnavailable } from '../db/database-error.js';
import { DatabaseError, EventIdConflictError, ValidationError } from '../errors.js';
import { extractTraceContext, injectTraceContext } from '../observability/trace-context.js';
import { withSpan } from '../observability/tracing.js';
import type { EventStore } from '../store/event-store.js';

export interface InboxOptions {
  store: EventStore<any>;
  consumer: BrokerConsumer;
  /** The stream a message is appended to. @defaultValue its aggregate id */
  streamOf?: (message: BrokerMessage) => string;
  /** Called when storing fails for a reason that may pass (the database is down): the same delivery is tried again. */
  onError?: (err: unknown) => void;
  /** Wait after a failed store before taking the next delivery, doubling up to 5 s. @defaultValue 100 */
  backoffMs?: number;
}

export interface InboxCounts {
  stored: number;
  /** Deliveries of messages already in the log: appended nothing. */
  duplicates: number;
  deadLettered: number;
}

export interface Inbox {
  readonly counts: Readonly<InboxCounts>;
  stop(): Promise<void>;
  readonly done: Promise<void>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NAMESPACE = 'rastro.inbox.message-id:';

/** The event id of a message: its id when it is a UUID, else a UUID derived from it (version 5 style), the same every time. */
export function eventIdOf(messageId: string): string {
  if (UUID.test(messageId)) return messageId.toLowerCase();
  const bytes = createHash('sha1').update(NAMESPACE + messageId).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Text as a `text` or `jsonb` column takes it: NUL and lone surrogates become U+FFFD. */
function storableText(text: string): string {
  return text.replace(/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/**
 * Why the database refused this message's content, or undefined when the failure is not the
 * message's: SQLSTATE class 22 (data exception: a value out of range, text it cannot hold), 23
 * (integrity) and 54 (too large) are about what was sent; everything else (the database away, a
 * deadlock, a missing table) may pass, so the delivery is retried.
 */
function contentRefusal(err: unknown): string | undefined {
  if (err instanceof EventIdConflictError || err instanceof ValidationError) return err.message;
  if (err instanceof DatabaseError && !isDatabaseUnavailable(err) && /^(22|23|54)/.test(err.sqlState ?? '')) {
    return `the database refused it (SQLSTATE ${err.sqlState}): ${err.message}`;
  }
  return undefined;
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The inbox: takes messages from a broker into the event log exactly once. Each message becomes
 * an event whose id is the message id, so a redelivery is a no-op of the store's idempotent
 * append; the delivery is acknowledged only after the append committed. A message that cannot
 * be stored (not rastro's format, a payload that is not a JSON object, an id already used with
 * other content) is kept in `inbox_dead_letters` with its reason, then acknowledged: never
 * dropped in silence. Processors take the events from there.
 *
 * @example
 * ```ts
 * const inbox = consumeIntoStore({ store, consumer: createNatsConsumer({ url: 'nats://127.0.0.1:4222' }) })
 * ```
 */
export function consumeIntoStore(options: InboxOptions): Inbox {
  const { store, consumer } = options;
  const streamOf = options.streamOf ?? ((message: BrokerMessage) => message.aggregateId);
  const deadLetterSql = `insert into ${quoteSchema(store.schema)}.inbox_dead_letters (broker, source, message_id, reason, body, headers) values ($1, $2, $3, $4, $5, $6)`;
  const counts: InboxCounts = { stored: 0, duplicates: 0, deadLettered: 0 };
  let failures = 0;

  /**
   * Keeps the delivery in `inbox_dead_letters`, then acknowledges it. The body is stored as the
   * bytes received (bytea takes any); the text columns get NUL and lone surrogates as U+FFFD.
   */
  async function deadLetter(delivery: Delivery, reason: string): Promise<void> {
    const { raw } = delivery;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(raw.headers)) headers[storableText(name)] = storableText(value);
    const body = raw.bytes ? Buffer.from(raw.bytes.buffer, raw.bytes.byteOffset, raw.bytes.byteLength) : Buffer.from(raw.body, 'utf8');
    const messageId = raw.messageId === null ? null : storableText(raw.messageId);
    await store.db.query(deadLetterSql, [consumer.kind, storableText(raw.source), messageId, storableText(reason), body, JSON.stringify(headers)]);
    await delivery.ack();
    counts.deadLettered++;
  }

  /**
   * Stores a delivery in a `rastro.inbox.consume` span (kind CONSUMER) that continues the
   * message's trace; the event carries the span's trace context, so its handlers continue it too.
   */
  function consume(delivery: Delivery): Promise<void> {
    const { raw } = delivery;
    const attributes = { 'messaging.system': consumer.kind, 'messaging.operation.type': 'process', 'messaging.destination.name': raw.source, 'messaging.message.id': raw.messageId ?? '' };
    return withSpan('rastro.inbox.consume', attributes, (span, ctx) => store1(delivery, span, ctx), { kind: SpanKind.CONSUMER, parent: extractTraceContext(raw.headers) });
  }

  async function store1(delivery: Delivery, span: Span, ctx: Context): Promise<void> {
    const outcome = (name: keyof InboxCounts) => void span.setAttribute('rastro.inbox.outcome', name);
    const message = decodeDelivery(delivery.raw);
    if (typeof message === 'string') return deadLetter(delivery, message).then(() => outcome('deadLettered'));
    if (!isJsonObject(message.payload)) return deadLetter(delivery, 'the payload is not a JSON object').then(() => outcome('deadLettered'));
    const id = eventIdOf(message.id);
    const trace = injectTraceContext({}, ctx);
    const metadata = {
      messageId: message.id, aggregateType: message.aggregateType, aggregateId: message.aggregateId, broker: consumer.kind,
      ...(Object.keys(message.headers).length > 0 ? { headers: message.headers } : {}),
      ...(trace.traceparent ? trace : {}),
    };
    span.setAttributes({ 'rastro.event.id': id, 'rastro.event.type': message.type });
    try {
      const streamId = streamOf(message);
      span.setAttribute('rastro.stream.id', streamId);
      const before = await store.streamVersion(streamId);
      const result = await store.append(streamId, [{ id, type: message.type, data: message.payload, metadata, occurredAt: message.occurredAt }]);
      const duplicate = result.streamVersion <= before;
      counts[duplicate ? 'duplicates' : 'stored']++;
      outcome(duplicate ? 'duplicates' : 'stored');
    } catch (err) {
      const refusal = contentRefusal(err);
      if (refusal !== undefined) return deadLetter(delivery, refusal).then(() => outcome('deadLettered'));
      throw err;
    }
    await delivery.ack();
  }

  /**
   * Stores one delivery, trying it again in place while storing fails for a reason that may pass:
   * handing it back would let the deliveries behind it overtake it. Stopped meanwhile, it leaves
   * the delivery unacknowledged, and the broker gives it to the next reader.
   */
  async function handle(delivery: Delivery): Promise<void> {
    for (;;) {
      try {
        await consume(delivery);
        failures = 0;
        return;
      } catch (err) {
        if (stopped) return;
        options.onError?.(err);
        failures++;
        await delivery.inProgress?.().catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, Math.min(5000, (options.backoffMs ?? 100) * 2 ** (failures - 1))));
        if (stopped) return;
      }
    }
  }

  let stopped = false;
  const done = consumer.run(handle, options.onError);
  return {
    counts,
    stop: () => {
      stopped = true;
      return consumer.stop();
    },
    done,
  };
}
