import amqp, { type Channel, type ConsumeMessage } from 'amqplib';
import type { BrokerConsumer, Delivery } from './consumer.js';

export interface AmqpConsumerOptions {
  url: string;
  /** The durable queue read, declared when `declare` is on. @defaultValue 'rastro-inbox' */
  queue?: string;
  /** The exchange the queue is bound to. @defaultValue 'rastro' */
  exchange?: string;
  /** @defaultValue '#' (every message of the exchange) */
  bindingKey?: string;
  /** Declare the exchange, the queue and the binding. @defaultValue true */
  declare?: boolean;
  /** Deliveries unacknowledged at once. @defaultValue 256 */
  prefetch?: number;
}

function toDelivery(channel: Channel, m: ConsumeMessage): Delivery {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(m.properties.headers ?? {})) if (value !== undefined && value !== null) headers[name.toLowerCase()] = String(value);
  return {
    raw: { messageId: m.properties.messageId ?? null, source: m.fields.routingKey, headers, body: m.content.toString('utf8'), bytes: m.content },
    ack: async () => channel.ack(m),
    retry: async () => channel.nack(m, false, true),
  };
}

/**
 * A RabbitMQ queue for the inbox, acknowledged manually: a delivery is acknowledged only after
 * the inbox committed it, so a crash redelivers it and the store's idempotent append makes that
 * a no-op. Reconnects after a lost connection.
 *
 * @example
 * ```ts
 * const inbox = consumeIntoStore({ store, consumer: createAmqpConsumer({ url: 'amqp://guest:guest@127.0.0.1:5672' }) })
 * ```
 */
export function createAmqpConsumer(options: AmqpConsumerOptions): BrokerConsumer {
  const queue = options.queue ?? 'rastro-inbox';
  let stopped = false;
  let wake!: () => void;
  const stopping = new Promise<void>((resolve) => (wake = resolve));
  let running: Promise<void> | undefined;

  /** Consumes on a new connection; resolves once the connection closed. */
  async function consumeOnce(handle: (delivery: Delivery) => Promise<void>): Promise<void> {
    const connection = await amqp.connect(options.url);
    try {
      const closed = new Promise<void>((resolve) => connection.once('close', () => resolve()));
      connection.on('error', () => undefined);
      // Stopped while connecting: this connection is the last one, and it closes now.
      if (stopped) return;
      const channel = await connection.createChannel();
      channel.on('error', () => undefined);
      if (options.declare ?? true) {
        const exchange = options.exchange ?? 'rastro';
        await channel.assertExchange(exchange, 'topic', { durable: true });
        await channel.assertQueue(queue, { durable: true });
        await channel.bindQueue(queue, exchange, options.bindingKey ?? '#');
      }
      await channel.prefetch(options.prefetch ?? 256);
      // One delivery at a time, in order: the next waits for the previous one's commit.
      let chain = Promise.resolve();
      await channel.consume(queue, (m) => {
        if (!m) return;
        chain = chain.then(() => handle(toDelivery(channel, m))).catch(() => undefined);
      }, { noAck: false });
      await Promise.race([closed, stopping]);
    } finally {
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
