import { HEADER, type BrokerMessage } from './message.js';

/** A message as a consumer received it, before the inbox stores it. */
export interface Delivery {
  /**
   * What the broker said: its message id, subject or routing key, headers (names lowercased),
   * the body as UTF-8 text, and `bytes`, the body exactly as received (what a dead letter keeps).
   */
  raw: { messageId: string | null; source: string; headers: Record<string, string>; body: string; bytes?: Uint8Array };
  /** Acknowledges: the broker will not deliver it again. Only after it is committed (or dead-lettered). */
  ack(): Promise<void>;
  /** Hands it back for a later redelivery. The inbox does not: it retries in place, to keep the order. */
  retry(): Promise<void>;
  /** Tells the broker the delivery is still being worked on (JetStream: resets its ack wait). */
  inProgress?(): Promise<void>;
}

/** Where the inbox reads from: a JetStream consumer or a RabbitMQ queue. */
export interface BrokerConsumer {
  readonly kind: 'nats' | 'amqp';
  /** Calls `handle` for each delivery, one at a time, in the broker's order, until `stop`; reconnects on its own. */
  run(handle: (delivery: Delivery) => Promise<void>, onError?: (err: unknown) => void): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Reads a delivery in rastro's format (the relay's): the id, type and aggregate in headers, the
 * payload as a JSON body. Returns the reason it cannot be read otherwise.
 */
export function decodeDelivery(raw: Delivery['raw']): BrokerMessage | string {
  const header = (name: string) => raw.headers[name];
  if (!raw.messageId) return 'no message id';
  const type = header(HEADER.type);
  const aggregateType = header(HEADER.aggregateType);
  const aggregateId = header(HEADER.aggregateId);
  if (!type) return `no ${HEADER.type} header`;
  if (!aggregateType || !aggregateId) return `no ${HEADER.aggregateType} or ${HEADER.aggregateId} header`;
  let payload: unknown;
  try {
    payload = JSON.parse(raw.body);
  } catch {
    return 'the body is not JSON';
  }
  const occurred = header(HEADER.occurredAt);
  const occurredAt = occurred ? new Date(occurred) : new Date(0);
  if (!Number.isFinite(occurredAt.getTime())) return `${HEADER.occurredAt} is not a date`;
  // JavaScript dates reach ±275760; PostgreSQL reads ISO 8601 only for years 1 to 9999.
  const year = occurredAt.getUTCFullYear();
  if (year < 1 || year > 9999) return `${HEADER.occurredAt} is outside years 0001–9999`;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw.headers)) if (!name.startsWith('rastro-') && name !== HEADER.traceparent && !/^nats-/i.test(name)) headers[name] = value;
  return { id: raw.messageId, aggregateType, aggregateId, type, payload, headers, traceparent: header(HEADER.traceparent) ?? null, occurredAt };
}
