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
  /** The durable's max_ack_pending: deliveries handed out and not yet acknowledged. @defaultValue 256 */
  maxAckPending?: number;
  /**
   * This is the durable's only active reader (`rastro consume` holds a lease for it): on start,
   * when a reader before it left deliveries unacknowledged (it was killed), the durable is set
   * back to its acknowledgement floor, so those come again first and in order instead of after
   * newer messages when their ack wait runs out. @defaultValue false
   */
  exclusive?: boolean;
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
    inProgress: async () => m.working(),
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
  const maxAckPending = options.maxAckPending ?? 256;
  let nc: NatsConnection | undefined;
  let messages: ConsumerMessages | undefined;
  let stopped = false;

  const settings = { ack_wait: (options.ackWaitMs ?? 30_000) * 1_000_000, max_ack_pending: maxAckPending };

  async function ensureConsumer(connection: NatsConnection): Promise<void> {
    const jsm = await jetstreamManager(connection);
    const base = { durable_name: durable, ack_policy: AckPolicy.Explicit, ...settings, ...(options.filterSubject ? { filter_subject: options.filterSubject } : {}) };
    let info;
    try {
      info = await jsm.consumers.info(streamName, durable);
    } catch (err) {
      if (!(err instanceof JetStreamApiError) || err.status !== 404) throw err;
      await jsm.consumers.add(streamName, { ...base, deliver_policy: DeliverPolicy.All });
      return;
    }
    if (options.exclusive && info.num_ack_pending > 0) {
      // Deliveries are acknowledged one at a time in stream order, so the floor is the last one stored.
      await jsm.consumers.delete(streamName, durable);
      await jsm.consumers.add(streamName, { ...base, filter_subject: info.config.filter_subject, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: info.ack_floor.stream_seq + 1 });
      return;
    }
    if (info.config.ack_wait !== settings.ack_wait || info.config.max_ack_pending !== settings.max_ack_pending) await jsm.consumers.update(streamName, durable, settings);
  }

  let wake!: () => void;
  const stopping = new Promise<void>((resolve) => (wake = resolve));
  let running: Promise<void> | undefined;

  async function consumeOnce(handle: (delivery: Delivery) => Promise<void>): Promise<void> {
    nc ??= await connect({ servers: options.url.split(','), name: 'rastro-inbox', maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    if (stopped) return;
    await ensureConsumer(nc);
    const consumer = await jetstream(nc).consumers.get(streamName, durable);
    if (stopped) return;
    messages = await consumer.consume({ max_messages: Math.min(256, maxAckPending) });
    // Stopped while the consumer was being set up: its messages close now.
    if (stopped) await messages.close().catch(() => undefined);
    for await (const m of messages) {
      if (stopped) break;
      await handle(toDelivery(m, retryDelayMs));
    }
  }

  return {
    kind: 'nats',
    run(handle, onError) {
      running = (async () => {
        try {
          while (!stopped) {
            try {
              await consumeOnce(handle);
            } catch (err) {
              if (stopped) break;
              onError?.(err);
              await Promise.race([stopping, new Promise((resolve) => setTimeout(resolve, 500))]);
            }
          }
        } finally {
          await messages?.close().catch(() => undefined);
          await nc?.close().catch(() => undefined);
        }
      })();
      return running;
    },
    /** Resolves once the connection is closed, also when it was still being opened. */
    async stop() {
      stopped = true;
      wake();
      await messages?.close().catch(() => undefined);
      await running;
    },
  };
}
