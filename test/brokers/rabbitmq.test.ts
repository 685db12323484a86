import { randomBytes, randomUUID } from 'node:crypto';
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAmqpConsumer } from '../../packages/rastro/src/brokers/amqp-consumer.js';
import { createAmqpPublisher } from '../../packages/rastro/src/brokers/amqp.js';
import type { Publisher } from '../../packages/rastro/src/brokers/message.js';
import { consumeIntoStore, type Inbox } from '../../packages/rastro/src/inbox/consume-into-store.js';
import { createOutbox } from '../../packages/rastro/src/outbox/outbox.js';
import { relayAdmin } from '../../packages/rastro/src/outbox/relay-admin.js';
import { runRelay, type Relay } from '../../packages/rastro/src/outbox/relay.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema } from '../support/databases.js';
import { freePort, RABBITMQ_URL, startTcpProxy } from '../support/brokers.js';
import { runRastro } from '../support/cli.js';
import { eventually } from '../support/eventually.js';
import { storeWithMessages as storeWith } from '../support/outbox-writers.js';

const backend = backends().at(-1)!;
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

let connection: ChannelModel;
let channel: Channel;
beforeAll(async () => {
  if (!RABBITMQ_URL) return;
  connection = await amqp.connect(RABBITMQ_URL);
  channel = await connection.createChannel();
});
afterAll(async () => {
  await connection?.close();
});

/** A queue's counts, asked on a channel of its own: asking about a missing queue closes the channel. */
async function queueInfo(queue: string) {
  const probe = await connection.createChannel();
  probe.on('error', () => undefined);
  try {
    return await probe.checkQueue(queue);
  } finally {
    await probe.close().catch(() => undefined);
  }
}

/** An exchange and a queue bound to all of it, the test's own, deleted after it. */
async function exchangeWithQueue(queueArguments: Record<string, unknown> = {}, bindingKey = '#') {
  const tag = randomBytes(4).toString('hex');
  const exchange = `t_${tag}`;
  const queue = `t_${tag}_q`;
  await channel.assertExchange(exchange, 'topic', { durable: true });
  await channel.assertQueue(queue, { durable: false, arguments: queueArguments });
  await channel.bindQueue(queue, exchange, bindingKey);
  cleanups.push(async () => {
    await channel.deleteQueue(queue);
    await channel.deleteExchange(exchange);
  });
  return { exchange, queue };
}

const storeWithMessages = (messages: { aggregateId: string; type?: string; n: number }[]) => storeWith(backend, messages);

function track<T extends Relay | Publisher | Inbox>(thing: T): T {
  cleanups.push(() => ('stop' in thing ? thing.stop() : thing.close()));
  return thing;
}

/** Everything delivered to the queue until `expected` arrived, by a real consumer. */
async function drain(queue: string, expected: number): Promise<ConsumeMessage[]> {
  const got: ConsumeMessage[] = [];
  const { consumerTag } = await channel.consume(queue, (m) => m && got.push(m), { noAck: true });
  try {
    await eventually(() => got.length >= expected, `${expected} messages on ${queue}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  } finally {
    await channel.cancel(consumerTag);
  }
  return got;
}

const nOf = (m: ConsumeMessage) => (JSON.parse(m.content.toString()) as { n: number }).n;

function expectInOrderPerAggregate(got: ConsumeMessage[], written: { aggregateId: string; n: number }[]): void {
  const firsts = new Map<string, number[]>();
  const seen = new Set<string>();
  for (const m of got) {
    if (seen.has(m.properties.messageId)) continue;
    seen.add(m.properties.messageId);
    const aggregateId = String(m.properties.headers!['rastro-aggregate-id']);
    firsts.set(aggregateId, [...(firsts.get(aggregateId) ?? []), nOf(m)]);
  }
  expect(seen.size).toBe(written.length);
  for (const [aggregateId, ns] of firsts) expect(ns).toEqual(written.filter((m) => m.aggregateId === aggregateId).map((m) => m.n));
}

describe.skipIf(!RABBITMQ_URL)(`the relay and the inbox on RabbitMQ (${backend.name})`, () => {
  it('publishes every outbox message persistent, with its id as messageId, in order per aggregate, on publisher confirms', async () => {
    const { exchange, queue } = await exchangeWithQueue();
    const written = Array.from({ length: 300 }, (_, n) => ({ aggregateId: `a${n % 11}`, n }));
    const store = await storeWithMessages(written);
    track(await runRelay({ store, publisher: track(createAmqpPublisher({ url: RABBITMQ_URL!, exchange })), pollIntervalMs: 50, batchSize: 64 }));
    const got = await drain(queue, 300);
    expect(got).toHaveLength(300);
    expect(got[0]!.fields.routingKey).toBe('order.OrderChanged');
    expect(got[0]!.properties).toMatchObject({ deliveryMode: 2, contentType: 'application/json', type: 'OrderChanged' });
    expectInOrderPerAggregate(got, written);
  });

  it('waits out a nack (a full reject-publish queue) as an outage: parks nothing, and publishes each message in order once the queue has room', async () => {
    const { exchange, queue } = await exchangeWithQueue({ 'x-max-length': 1, 'x-overflow': 'reject-publish' });
    const store = await storeWithMessages([{ aggregateId: 'full', n: 1 }, { aggregateId: 'full', n: 2 }, { aggregateId: 'full', n: 3 }]);
    const errors: unknown[] = [];
    track(await runRelay({ store, publisher: track(createAmqpPublisher({ url: RABBITMQ_URL!, exchange })), pollIntervalMs: 50, maxAttempts: 2, retryDelayMs: 10, maxBackoffMs: 200, onError: (e) => errors.push(e) }));
    // More nacks than maxAttempts: a refusal would have parked the message by now.
    await eventually(() => errors.length >= 4, 'the relay meeting nacks');
    expect(String(errors[0])).toMatch(/could not take the message now \(nack\)/);
    expect(await relayAdmin(store).parked()).toEqual([]);
    expect((await drain(queue, 3)).map(nOf)).toEqual([1, 2, 3]);
    await eventually(async () => (await relayAdmin(store).status())[0]!.pending === 0, 'every message published');
  });

  it('parks a message sent to a missing exchange', async () => {
    const missing = await storeWithMessages([{ aggregateId: 'x', n: 5 }]);
    track(await runRelay({ store: missing, publisher: track(createAmqpPublisher({ url: RABBITMQ_URL!, exchange: `nope_${randomBytes(4).toString('hex')}`, declareExchange: false })), pollIntervalMs: 50, maxAttempts: 1 }));
    const [refused] = await eventually(async () => {
      const list = await relayAdmin(missing).parked();
      return list.length === 1 ? list : undefined;
    }, 'the message to a missing exchange parked');
    expect(refused!.error).toMatch(/has no exchange/);
  });

  it('parks a message no queue is bound for (returned, mandatory), holding back only its aggregate, and outbox parked retry delivers all in order once a queue is bound', async () => {
    // The relay runs before any consumer: only the Bound messages have a queue yet.
    const { exchange, queue: bound } = await exchangeWithQueue({}, 'order.Bound');
    const written = [
      ...Array.from({ length: 12 }, (_, n) => ({ aggregateId: `a${n % 3}`, n })),
      ...Array.from({ length: 4 }, (_, n) => ({ aggregateId: 'b', type: 'Bound', n: 100 + n })),
    ];
    const store = await storeWithMessages(written);
    const relay = track(await runRelay({ store, publisher: track(createAmqpPublisher({ url: RABBITMQ_URL!, exchange })), pollIntervalMs: 50, maxAttempts: 2, retryDelayMs: 10 }));
    const parked = await eventually(async () => {
      const list = await relayAdmin(store).parked();
      return list.length === 12 ? list : undefined;
    }, 'every unroutable message parked');
    // The Bound aggregate was not held back.
    expect((await drain(bound, 4)).map(nOf)).toEqual([100, 101, 102, 103]);
    const failed = parked.filter((p) => p.reason === 'failed');
    expect(failed.map((p) => p.aggregateKey).sort()).toEqual(['order:a0', 'order:a1', 'order:a2']);
    for (const p of failed) expect(p.error).toMatch(/RabbitMQ returned the message: no queue is bound to exchange .* for routing key "order.OrderChanged" \(312 NO_ROUTE\)/);
    // Returned messages are not counted as published.
    const [status] = await relayAdmin(store).status();
    expect(status!.counters.published).toBe(4);
    expect(status!.parked).toBe(12);
    expect(relay.counters.get('published')).toBe(4);

    const late = `${bound}_late`;
    await channel.assertQueue(late, { durable: false });
    await channel.bindQueue(late, exchange, 'order.OrderChanged');
    cleanups.push(() => channel.deleteQueue(late));
    for (const p of failed) {
      if (backend.name === 'postgres') {
        const env = { DATABASE_URL: process.env.DATABASE_URL, RASTRO_SCHEMA: store.schema, RASTRO_BROKER_URL: RABBITMQ_URL, RASTRO_AMQP_EXCHANGE: exchange };
        const result = await runRastro(['outbox', 'parked', 'retry', p.messageId], env);
        expect(result, result.stderr).toMatchObject({ code: 0, stdout: 'published 4, still parked 0\n' });
      } else {
        expect(await relayAdmin(store).retry(p.messageId, track(createAmqpPublisher({ url: RABBITMQ_URL!, exchange })))).toEqual({ published: 4, stillParked: 0 });
      }
    }
    expectInOrderPerAggregate(await drain(late, 12), written.filter((m) => m.aggregateId !== 'b'));
    const [after] = await relayAdmin(store).status();
    expect(after).toMatchObject({ parked: 0, pending: 0, counters: { published: 16 } });
  });

  it('reconnects after the connection is cut, keeps its place and loses nothing', async () => {
    const { exchange, queue } = await exchangeWithQueue();
    const url = new URL(RABBITMQ_URL!);
    const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5672) });
    cleanups.push(() => proxy.close());
    url.port = String(proxy.port);
    const written = Array.from({ length: 200 }, (_, n) => ({ aggregateId: `a${n % 5}`, n }));
    const store = await storeWithMessages(written.slice(0, 100));
    const errors: unknown[] = [];
    const relay = track(await runRelay({ store, publisher: track(createAmqpPublisher({ url: url.toString(), exchange, confirmTimeoutMs: 1000 })), pollIntervalMs: 50, maxBackoffMs: 300, onError: (e) => errors.push(e) }));
    await eventually(() => relay.counters.get('published') >= 100, 'the first half published');
    await proxy.cut();
    const outbox = createOutbox(store.db, { schema: store.schema });
    for (const { aggregateId, n } of written.slice(100)) {
      await store.db.transaction((tx) => outbox.write(tx, { aggregateType: 'order', aggregateId, type: 'OrderChanged', payload: { n } }));
    }
    await eventually(() => errors.length >= 2, 'the relay failing while the connection is cut');
    await proxy.restore();
    await eventually(async () => (await relayAdmin(store).status())[0]!.pending === 0, 'the relay resuming', 30_000);
    expectInOrderPerAggregate(await drain(queue, 200), written);
  });

  it('takes messages into the log once each, acknowledges after the commit, and dead-letters what it cannot store', async () => {
    const { exchange } = await exchangeWithQueue();
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const queue = `inbox_${randomBytes(4).toString('hex')}`;
    cleanups.push(() => channel.deleteQueue(queue));
    const publisher = track(createAmqpPublisher({ url: RABBITMQ_URL!, exchange }));
    // The queue exists before the messages are sent.
    const consumer = createAmqpConsumer({ url: RABBITMQ_URL!, exchange, queue });
    const inbox = track(consumeIntoStore({ store, consumer }));
    await eventually(async () => (await queueInfo(queue)).consumerCount === 1, 'the inbox consuming');
    const message = { id: randomUUID(), aggregateType: 'order', aggregateId: 'order-9', type: 'order.paid', payload: { cents: 900 }, headers: {}, traceparent: null, occurredAt: new Date('2026-10-14T12:00:00Z') };
    await publisher.publish(message);
    await publisher.publish(message);
    channel.publish(exchange, 'foreign.thing', Buffer.from('{"x":1}'), { messageId: 'foreign-1' });
    await eventually(() => inbox.counts.stored + inbox.counts.duplicates + inbox.counts.deadLettered === 3, 'three deliveries handled');
    expect(inbox.counts).toEqual({ stored: 1, duplicates: 1, deadLettered: 1 });
    expect(await store.readStream('order-9')).toMatchObject([{ id: message.id, data: { cents: 900 }, metadata: { broker: 'amqp' } }]);
    const { rows } = await db.query<{ reason: string; message_id: string }>(`select reason, message_id from "${schema}".inbox_dead_letters`);
    expect(rows).toEqual([{ reason: 'no rastro-type header', message_id: 'foreign-1' }]);
    await inbox.stop();
    expect((await queueInfo(queue)).messageCount).toBe(0);
  });
  it('publishes and consumes through a list of nodes whose first is down, into a quorum queue when asked', async () => {
    const { exchange } = await exchangeWithQueue();
    const nodes = `amqp://guest:guest@127.0.0.1:${await freePort()},${RABBITMQ_URL}`;
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const queue = `inbox_q_${randomBytes(4).toString('hex')}`;
    cleanups.push(() => channel.deleteQueue(queue));
    const inbox = track(consumeIntoStore({ store, consumer: createAmqpConsumer({ url: nodes, exchange, queue, queueType: 'quorum' }) }));
    await eventually(async () => (await queueInfo(queue)).consumerCount === 1, 'the inbox consuming');
    // Declared again as classic, the queue is refused: it is a quorum queue, with a single active consumer.
    const probe = await connection.createChannel();
    probe.on('error', () => undefined);
    await expect(probe.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'classic', 'x-single-active-consumer': true } })).rejects.toThrow(/inequivalent arg 'x-queue-type'.*current is 'quorum'/);
    const message = { id: randomUUID(), aggregateType: 'order', aggregateId: 'order-q', type: 'order.paid', payload: { cents: 1 }, headers: {}, traceparent: null, occurredAt: new Date() };
    await track(createAmqpPublisher({ url: nodes, exchange })).publish(message);
    await eventually(() => inbox.counts.stored === 1, 'the message stored');
  });
  it('reads on after the broker cancels its consumer (the queue went away), instead of going quiet', async () => {
    const { exchange } = await exchangeWithQueue();
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const queue = `inbox_c_${randomBytes(4).toString('hex')}`;
    cleanups.push(() => channel.deleteQueue(queue));
    const inbox = track(consumeIntoStore({ store, consumer: createAmqpConsumer({ url: RABBITMQ_URL!, exchange, queue }) }));
    await eventually(async () => (await queueInfo(queue)).consumerCount === 1, 'the inbox consuming');
    await channel.deleteQueue(queue);
    await eventually(async () => (await queueInfo(queue)).consumerCount === 1, 'the inbox consuming its queue declared again');
    const message = { id: randomUUID(), aggregateType: 'order', aggregateId: 'order-c', type: 'order.paid', payload: { cents: 2 }, headers: {}, traceparent: null, occurredAt: new Date() };
    await track(createAmqpPublisher({ url: RABBITMQ_URL!, exchange })).publish(message);
    await eventually(() => inbox.counts.stored === 1, 'the message stored');
  });
});
