// `rastro/nats`: the relay's publisher and the inbox's consumer on NATS JetStream. A module of its
// own so that an application that does not use NATS does not install or load its client.
export { createNatsPublisher, type NatsPublisherOptions } from './brokers/nats.js';
export { createNatsConsumer, type NatsConsumerOptions } from './brokers/nats-consumer.js';
export { streamRecords, type StreamRecord } from './brokers/nats-stream-records.js';
