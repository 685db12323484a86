import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../packages/server/src/config.js';

describe('RASTRO_BROKER_URL and RASTRO_AMQP_QUEUE_TYPE', () => {
  it('takes a cluster as its nodes separated by commas, all of one broker', () => {
    const url = 'amqp://u:p@a:5672, amqp://u:p@b:5672,amqp://u:p@c:5672';
    expect(resolveConfig({}, { RASTRO_BROKER_URL: url }).brokerUrl).toBe('amqp://u:p@a:5672,amqp://u:p@b:5672,amqp://u:p@c:5672');
    expect(resolveConfig({}, { RASTRO_BROKER_URL: 'nats://a:4222,nats://b:4222' }).brokerUrl).toBe('nats://a:4222,nats://b:4222');
  });

  it('refuses a list that mixes brokers or holds something that is not a broker URL', () => {
    expect(() => resolveConfig({}, { RASTRO_BROKER_URL: 'amqp://a:5672,nats://b:4222' })).toThrow(/names NATS and RabbitMQ servers together/);
    expect(() => resolveConfig({}, { RASTRO_BROKER_URL: 'amqp://a:5672,http://b' })).toThrow(/RASTRO_BROKER_URL must be a nats:\/\/ or amqp:\/\/ URL/);
    expect(() => resolveConfig({}, { RASTRO_BROKER_URL: 'amqp://a:5672,' })).toThrow(/RASTRO_BROKER_URL/);
  });

  it('declares classic queues unless told quorum, and refuses another type', () => {
    expect(resolveConfig({}, {}).amqpQueueType).toBe('classic');
    expect(resolveConfig({}, { RASTRO_AMQP_QUEUE_TYPE: 'quorum' }).amqpQueueType).toBe('quorum');
    expect(() => resolveConfig({}, { RASTRO_AMQP_QUEUE_TYPE: 'stream' })).toThrow(/RASTRO_AMQP_QUEUE_TYPE must be classic or quorum/);
  });
});
