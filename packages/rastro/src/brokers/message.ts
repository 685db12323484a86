/**
 * A message as it travels to and from a broker: the relay publishes outbox rows (or chosen
 * events) as these, and the inbox takes them back into the event log. `id` is stable across
 * republishes, so brokers (JetStream's `Nats-Msg-Id`) and consumers can deduplicate.
 */
export interface BrokerMessage {
  id: string;
  aggregateType: string;
  aggregateId: string;
  type: string;
  /** A JSON value; sent as the body, `application/json`. */
  payload: unknown;
  /** Application headers, strings only. */
  headers: Readonly<Record<string, string>>;
  /** W3C trace context of whatever wrote the message. */
  traceparent: string | null;
  occurredAt: Date;
}

/** How a broker answered a publish. */
export interface PublishAck {
  /** The broker had this id already (JetStream's duplicate window): published before, counts as published. */
  duplicate: boolean;
}

/**
 * Where the relay publishes. `publish` resolves once the broker has the message (a JetStream
 * PubAck, a RabbitMQ publisher confirm); it rejects with {@link PublishRejectedError} when the
 * broker refused this message, and with anything else when the outcome is unknown (a timeout, a
 * lost connection): the relay retries the first a few times and then parks the message, and
 * backs off and keeps its place for the second.
 */
export interface Publisher {
  readonly kind: 'nats' | 'amqp' | 'memory';
  publish(message: BrokerMessage): Promise<PublishAck>;
  /**
   * Resolves when the broker answers now (connecting first if need be), rejects when it cannot
   * be reached within `timeoutMs`: what a readiness check asks. Optional for publishers of
   * one's own; `rastro serve`'s `/readyz` counts one without it as connected.
   */
  ping?(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Rejects when `promise` has not settled within `ms`. */
export function withinTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The broker refused this message (no stream for its subject, an exchange that does not exist, too large). */
export class PublishRejectedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PublishRejectedError';
  }
}

/** Header names rastro puts on broker messages beside the application's own. */
export const HEADER = {
  aggregateType: 'rastro-aggregate-type',
  aggregateId: 'rastro-aggregate-id',
  type: 'rastro-type',
  occurredAt: 'rastro-occurred-at',
  traceparent: 'traceparent',
} as const;

/** The body of a message: its payload as JSON. */
export function encodeBody(message: BrokerMessage): Buffer {
  return Buffer.from(JSON.stringify(message.payload));
}

/** The headers a message is sent with: the application's, then rastro's (which win). */
export function wireHeaders(message: BrokerMessage): Record<string, string> {
  const headers: Record<string, string> = { ...message.headers };
  headers[HEADER.aggregateType] = message.aggregateType;
  headers[HEADER.aggregateId] = message.aggregateId;
  headers[HEADER.type] = message.type;
  headers[HEADER.occurredAt] = message.occurredAt.toISOString();
  if (message.traceparent) headers[HEADER.traceparent] = message.traceparent;
  return headers;
}
