// `rastro/rabbitmq`: the relay's publisher and the inbox's consumer on RabbitMQ. A module of its
// own so that an application that does not use RabbitMQ does not install or load amqplib.
export { createAmqpPublisher, type AmqpPublisherOptions } from './brokers/amqp.js';
export { createAmqpConsumer, type AmqpConsumerOptions, type AmqpQueueType } from './brokers/amqp-consumer.js';
