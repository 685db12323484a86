import type { Channel, ConsumeMessage } from 'amqplib';
import { amqpNodes } from './amqp-nodes.js';
import type { BrokerConsumer, Delivery } from './consumer.js';

/** `classic` queues live on one node; `quorum` queues are replicated (Raft) across a cluster's nodes. */
export type AmqpQueueType = 'classic' | 'quorum';

export interface AmqpConsumerOptions {
  /** `amqp://…`; the nodes of a cluster separated by commas, tried in turn. */
  url: string;
  /** The durable queue read, declared when `declare` is on. @defaultValue 'rastro-inbox' */
  queue?: string;
  /**
   * The type of the queue declared: `quorum` survives the loss of a minority of a cluster's
   * nodes, and is the production setting on a cluster. An existing queue keeps its type: a
   * queue declared with another is refused by RabbitMQ (PRECONDITION_FAILED). A quorum queue is
   * declared with a single active consumer and read one delivery at a time (see {@link QUORUM_ORDER}).
   * @defaultValue 'classic'
   */
  queueType?: AmqpQueueType;
  /** The exchange the queue is bound to. @defaultValue 'rastro' */
  exchange?: string;
  /** @defaultValue '#' (every message of the exchange) */
  bindingKey?: string;
  /** Declare the exchange, the queue and the binding. @defaultValue true */
  declare?: boolean;
  /** Deliveries unacknowledged at once; 1 on a quorum queue, whatever this says. @defaultValue 256 */
  prefetch?: number;
}

/**
 * How the inbox keeps an aggregate's order on a quorum queue. When a consumer's connection dies,
 * a classic queue puts its unacknowledged deliveries back in their places; a quorum queue moves
 * them to a queue of returns, served first but not in their order (rabbitmq-server#6804), and a
 * consumer that registered meanwhile could take newer messages before them. One delivery
 * unacknowledged at a time leaves one return to serve first, and a single active consumer
 * starts the next reader only once the queue has taken back the last one's delivery.
 */
const QUORUM_ORDER = { arguments: { 'x-queue-type': 'quorum', 'x-single-active-consumer': true }, prefetch: 1 } as const;

/**
 * A delivery on `channel`. Acknowledging on a channel that is gone does nothing: the broker
 * delivers the message again, and the inbox's idempotent append makes that a duplicate.
 */
function toDelivery(channel: Channel, m: ConsumeMessage, gone: () => boolean): Delivery {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(m.properties.headers ?? {})) if (value !== undefined && value !== null) headers[name.toLowerCase()] = String(value);
  const unlessGone = (act: () => void) => async () => {
    if (gone()) return;
    try {
      act();
    } catch (err) {
      if (!gone()) throw err;
    }
  };
  return {
    raw: { messageId: m.properties.messageId ?? null, source: m.fields.routingKey, headers, body: m.content.toString('utf8'), bytes: m.content },
    ack: unlessGone(() => channel.ack(m)),
    retry: unlessGone(() => channel.nack(m, false, true)),
  };
}

/**
 * A RabbitMQ queue for the inbox, acknowledged manually: a delivery is acknowledged only after
 * the inbox committed it, so a crash redelivers it and the store's idempotent append makes that
 * a no-op. Reconnects after a lost connection, to the next node of the list, and after the
 * broker cancels the consumer (its queue's node went away).
 *
 * @example
 * ```ts
 * const inbox = consumeIntoStore({ store, consumer: createAmqpConsumer({ url: 'amqp://guest:guest@127.0.0.1:5672' }) })
 * ```
 */
export function createAmqpConsumer(options: AmqpConsumerOptions): BrokerConsumer {
  const queue = options.queue ?? 'rastro-inbox';
  const queueType = options.queueType ?? 'classic';
  const nodes = amqpNodes(options.url);
  let stopped = false;
  let wake!: () => void;
  const stopping = new Promise<void>((resolve) => (wake = resolve));
  let running: Promise<void> | undefined;

  /** Consumes on a new connection; resolves once the connection closed or the broker cancelled the consumer. */
  async function consumeOnce(handle: (delivery: Delivery) => Promise<void>): Promise<void> {
    const connection = await nodes.connect();
    let gone = false;
    try {
      let cancelled!: () => void;
      const ended = new Promise<void>((resolve) => {
        cancelled = resolve;
        connection.once('close', () => resolve());
      });
      void ended.then(() => (gone = true));
      connection.on('error', () => undefined);
      // Stopped while connecting: this connection is the last one, and it closes now.
      if (stopped) return;
      const channel = await connection.createChannel();
      channel.on('error', () => undefined);
      channel.on('close', cancelled);
      if (options.declare ?? true) {
        const exchange = options.exchange ?? 'rastro';
        await channel.assertExchange(exchange, 'topic', { durable: true });
        await channel.assertQueue(queue, { durable: true, ...(queueType === 'quorum' ? { arguments: QUORUM_ORDER.arguments } : {}) });
        await channel.bindQueue(queue, exchange, options.bindingKey ?? '#');
      }
      await channel.prefetch(queueType === 'quorum' ? QUORUM_ORDER.prefetch : options.prefetch ?? 256);
      // One delivery at a time, in order: the next waits for the previous one's commit. Those
      // still queued here when the connection ends are skipped: the broker delivers them again.
      let chain = Promise.resolve();
      await channel.consume(queue, (m) => {
        // null: the broker cancelled this consumer (the queue was deleted, or its node left).
        if (!m) return cancelled();
        chain = chain.then(() => (gone ? undefined : handle(toDelivery(channel, m, () => gone)))).catch(() => undefined);
      }, { noAck: false });
      await Promise.race([ended, stopping]);
    } finally {
      gone = true;
      nodes.lost();
      await connection.close().catch(() => undefined);
    }
  }

  return {
    kind: 'amqp',
    run(handle, onError) {
      running = (async () => {
        while (!stopped) {
          try {
            await consumeOnce(handle);
          } catch (err) {
            if (stopped) break;
            onError?.(err);
          }
          if (!stopped) await Promise.race([stopping, new Promise((resolve) => setTimeout(resolve, 500))]);
        }
      })();
      return running;
    },
    /** Resolves once the connection is closed, also when it was still being opened. */
    async stop() {
      stopped = true;
      wake();
      await running;
    },
  };
}
