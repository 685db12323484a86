import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, JetStreamApiError, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import type { BrokerConsumer, Delivery } from './consumer.js';

export interface NatsConsumerOptions {
  url: string;
  /** @defaultValue 'RASTRO' */
  stream?: string;
  /** The durable consumer, created when missing. @defaultValue 'rastro-inbox' */
  durable?: string;
  /** Only these subjects, for a consumer this creates. @defaultValue every subject of the stream */
  filterSubject?: string;
  /** How long a delivery may go unacknowledged before JetStream redelivers it. @defaultValue 30000 */
  ackWaitMs?: number;
  /** Wait before a delivery handed back is redelivered. @defaultValue 1000 */
  retryDelayMs?: number;
}

function toDelivery(m: JsMsg, retryDelayMs: number): Delivery {
  const headers: Record<string, string> = {};
  for (const [name, values] of m.headers ?? []) headers[name.toLowerCase()] = values[0] ?? '';
  return {
    raw: { messageId: headers['nats-msg-id'] ?? null, source: m.subject, headers, body: m.string(), bytes: m.data },
    ack: async () => void (await m.ackAck()),
    retry: async () => m.nak(retryDelayMs),
  };
}

/**
 * A durable JetStream pull consumer for the inbox. Acknowledgements are explicit and awaited,
 * so a delivery is acknowledged only after the inbox committed it.
 *
 * @example
 * ```ts
 * const inbox = consumeIntoStore({ store, consumer: createNatsConsumer({ url: 'nats://127.0.0.1:4222' }) })
 * ```
 */
export function createNatsConsumer(options: NatsConsumerOptions): BrokerConsumer {
  const streamName = options.stream ?? 'RASTRO';
  const durable = options.durable ?? 'rastro-inbox';
  const retryDelayMs = options.retryDelayMs ?? 1000;
  let nc: NatsConnection | undefined;
  let messages: ConsumerMessages | undefined;
  let stopped = false;

  async function ensureConsumer(connection: NatsConnection): Promise<void> {
    const jsm = await jetstreamManager(connection);
    try {
      await jsm.consumers.info(streamName, durable);
    } catch (err) {
      if (!(err instanceof JetStreamApiError) || err.status !== 404) throw err;
      await jsm.consumers.add(streamName, {
        durable_name: durable, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All,
        ack_wait: (options.ackWaitMs ?? 30_000) * 1_000_000, ...(options.filterSubject ? { filter_subject: options.filterSubject } : {}),
      });
    }
  }

  return {
    kind: 'nats',
    async run(handle, onError) {
      while (!stopped) {
        try {
          nc ??= await connect({ servers: options.url.split(','), name: 'rastro-inbox', maxReconnectAttempts: -1, reconnectTimeWait: 250 });
          await ensureConsumer(nc);
          const consumer = await jetstream(nc).consumers.get(streamName, durable);
          messages = await consumer.consume({ max_messages: 256 });
          for await (const m of messages) {
            if (stopped) break;
            await handle(toDelivery(m, retryDelayMs));
          }
        } catch (err) {
          if (stopped) break;
          onError?.(err);
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    },
    async stop() {
      stopped = true;
      await messages?.close().catch(() => undefined);
      await nc?.close().catch(() => undefined);
    },
  };
}
