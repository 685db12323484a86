import type { RastroConfig } from '../config.js';
import { ConfigError } from 'rastro/internal/errors.js';
import { createAmqpConsumer } from 'rastro/internal/brokers/amqp-consumer.js';
import { createAmqpPublisher } from 'rastro/internal/brokers/amqp.js';
import type { BrokerConsumer } from 'rastro/internal/brokers/consumer.js';
import { createMemoryPublisher } from 'rastro/internal/brokers/memory.js';
import type { Publisher } from 'rastro/internal/brokers/message.js';
import { createNatsConsumer } from 'rastro/internal/brokers/nats-consumer.js';
import { createNatsPublisher } from 'rastro/internal/brokers/nats.js';
import { streamRecords, type StreamRecord } from 'rastro/internal/brokers/nats-stream-records.js';

type BrokerConfig = Pick<RastroConfig, 'brokerUrl' | 'subjectPrefix' | 'natsStream' | 'natsDuplicateWindowSeconds' | 'natsReplicas' | 'amqpExchange' | 'amqpQueueType'>;

/**
 * The publisher `RASTRO_BROKER_URL` names: NATS JetStream, RabbitMQ, or in process when unset.
 * `onWarning` hears what an operator should fix and nothing stops for (a stream with fewer
 * replicas than `RASTRO_NATS_REPLICAS`).
 */
export function openPublisher(config: BrokerConfig, events: { onWarning?: (message: string) => void } = {}): Publisher {
  const url = config.brokerUrl;
  if (!url) return createMemoryPublisher();
  if (url.startsWith('nats://')) {
    return createNatsPublisher({
      url, subjectPrefix: config.subjectPrefix, stream: config.natsStream, duplicateWindowMs: config.natsDuplicateWindowSeconds * 1000,
      replicas: config.natsReplicas, onWarning: events.onWarning,
    });
  }
  return createAmqpPublisher({ url, exchange: config.amqpExchange });
}

export interface InboxConsumerOptions {
  queue?: string;
  durable?: string;
  /** NATS: the durable's ack wait, in seconds. */
  ackWaitSeconds?: number;
  /** NATS: the durable's max_ack_pending; RabbitMQ: the prefetch. */
  maxAckPending?: number;
  /** The only active reader (it holds the inbox lease): see `NatsConsumerOptions.exclusive`. */
  exclusive?: boolean;
}

/** The inbox's consumer on the broker `RASTRO_BROKER_URL` names. */
export function openConsumer(config: BrokerConfig, options: InboxConsumerOptions = {}): BrokerConsumer {
  const url = config.brokerUrl;
  if (!url) throw new ConfigError('the inbox needs a broker: set RASTRO_BROKER_URL to a nats:// or amqp:// URL');
  if (url.startsWith('nats://')) {
    return createNatsConsumer({
      url, stream: config.natsStream, durable: options.durable, exclusive: options.exclusive,
      ackWaitMs: options.ackWaitSeconds === undefined ? undefined : options.ackWaitSeconds * 1000, maxAckPending: options.maxAckPending,
    });
  }
  return createAmqpConsumer({ url, exchange: config.amqpExchange, queue: options.queue, queueType: config.amqpQueueType, prefetch: options.maxAckPending });
}

/**
 * What the broker `RASTRO_BROKER_URL` names stored since a time, for the audit: a JetStream
 * stream is read back; a RabbitMQ queue cannot be (reading it would take its messages from its
 * consumer), so there is none. `inboxDurable` names the inbox's durable (`rastro consume --durable`):
 * what it acknowledged must be in the log.
 */
export function openBrokerRecords(config: Pick<BrokerConfig, 'brokerUrl' | 'natsStream'>, inboxDurable = 'rastro-inbox'): ((since: Date) => AsyncIterable<StreamRecord>) | undefined {
  const url = config.brokerUrl;
  if (!url?.startsWith('nats://')) return undefined;
  return (since) => streamRecords({ url, stream: config.natsStream, since, inboxDurable });
}
