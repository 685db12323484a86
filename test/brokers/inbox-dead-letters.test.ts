import { randomBytes } from 'node:crypto';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import amqp from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { createAmqpConsumer } from '../../packages/rastro/src/brokers/amqp-consumer.js';
import type { BrokerConsumer } from '../../packages/rastro/src/brokers/consumer.js';
import { createNatsConsumer } from '../../packages/rastro/src/brokers/nats-consumer.js';
import { consumeIntoStore } from '../../packages/rastro/src/inbox/consume-into-store.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { NATS_URL, RABBITMQ_URL } from '../support/brokers.js';
import { backends, freshSchema } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

// Messages whose bytes the database cannot take as they are: each becomes a dead letter with
// its reason and its body byte for byte, and is acknowledged; none is redelivered in a loop.

const backend = backends().at(-1)!;
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

interface Sent {
  id: string;
  body: Buffer;
  headers: Record<string, string>;
  /** What the dead letter's reason must say; undefined: the message is stored. */
  reason?: RegExp;
}

function rastroHeaders(overrides: Record<string, string> = {}): Record<string, string> {
  return { 'rastro-type': 'thing.noted', 'rastro-aggregate-type': 'thing', 'rastro-aggregate-id': 'thing-1', 'rastro-occurred-at': '2026-10-14T12:00:00.000Z', ...overrides };
}

function messages(tag: string): Sent[] {
  const deep = `{"a":${'['.repeat(5000)}${']'.repeat(5000)}}`;
  return [
    { id: `nul-byte-${tag}`, body: Buffer.from('{"a":"x\u0000y"}', 'utf8'), headers: rastroHeaders(), reason: /^the body is not JSON$/ },
    { id: `nul-escape-${tag}`, body: Buffer.from('{"a":"x\\u0000y"}', 'utf8'), headers: rastroHeaders(), reason: /U\+0000/ },
    { id: `year-bc-${tag}`, body: Buffer.from('{"a":1}'), headers: rastroHeaders({ 'rastro-occurred-at': '-000100-01-01T00:00:00.000Z' }), reason: /rastro-occurred-at is outside years 0001–9999/ },
    { id: `year-10000-${tag}`, body: Buffer.from('{"a":2}'), headers: rastroHeaders({ 'rastro-occurred-at': '+010000-01-01T00:00:00.000Z' }), reason: /rastro-occurred-at is outside years 0001–9999/ },
    { id: `not-utf8-${tag}`, body: Buffer.from([0x7b, 0xff, 0xfe, 0x00, 0x7d]), headers: rastroHeaders(), reason: /^the body is not JSON$/ },
    { id: `deep-${tag}`, body: Buffer.from(deep), headers: rastroHeaders(), reason: /serializable as JSON/ },
    { id: `nul-header-${tag}`, body: Buffer.from('{"a":3}'), headers: rastroHeaders({ 'x-note': 'a\u0000b' }), reason: /U\+0000/ },
    { id: `fine-${tag}`, body: Buffer.from('{"a":4}'), headers: rastroHeaders() },
  ];
}

async function expectDeadLettered(consumer: BrokerConsumer, sent: Sent[], publish: () => Promise<void>, settled: () => Promise<boolean>) {
  const { db, schema } = await freshSchema(backend);
  const store = createEventStore(db, { schema });
  const errors: unknown[] = [];
  const inbox = consumeIntoStore({ store, consumer, onError: (err) => errors.push(err) });
  cleanups.push(() => inbox.stop());
  await publish();
  const expected = sent.filter((m) => m.reason).length;
  await eventually(() => inbox.counts.deadLettered === expected && inbox.counts.stored === 1, `${expected} dead letters and one stored (errors: ${errors.map((e) => (e as Error).message).join('; ')})`);
  await eventually(settled, 'every delivery acknowledged');
  expect(errors).toEqual([]);
  const { rows } = await db.query<{ message_id: string; reason: string; body: Uint8Array; headers: Record<string, string> }>(
    `select message_id, reason, body, headers from "${schema}".inbox_dead_letters order by id`,
  );
  for (const message of sent.filter((m) => m.reason)) {
    const row = rows.find((r) => r.message_id === message.id);
    expect(row, message.id).toBeDefined();
    expect(row!.reason, message.id).toMatch(message.reason!);
    expect(Buffer.from(row!.body).equals(message.body), `${message.id} body kept byte for byte`).toBe(true);
  }
  expect(rows.find((r) => r.message_id.startsWith('nul-header'))!.headers['x-note']).toBe('a\uFFFDb');
  expect(await store.readStream('thing-1')).toMatchObject([{ data: { a: 4 } }]);
  // Nothing comes back: a delivery handed back would have raised the counts.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect(inbox.counts).toEqual({ stored: 1, duplicates: 0, deadLettered: expected });
  return inbox;
}

describe.skipIf(!NATS_URL)(`the inbox's dead letters on NATS JetStream (${backend.name})`, () => {
  it('keeps a message the database cannot store, whatever its bytes, as a dead letter with its reason, and acknowledges it', async () => {
    const nc: NatsConnection = await connect({ servers: NATS_URL! });
    cleanups.push(() => nc.close());
    const jsm = await jetstreamManager(nc);
    const tag = randomBytes(4).toString('hex');
    const stream = `T_DEAD_${tag}`;
    await jsm.streams.add({ name: stream, subjects: [`tdead${tag}.>`] });
    cleanups.push(() => jsm.streams.delete(stream));
    const sent = messages(tag);
    const consumer = createNatsConsumer({ url: NATS_URL!, stream, durable: 'inbox' });
    await expectDeadLettered(consumer, sent, async () => {
      for (const message of sent) {
        const h = natsHeaders();
        for (const [name, value] of Object.entries(message.headers)) h.set(name, value);
        await jetstream(nc).publish(`tdead${tag}.thing.noted`, message.body, { headers: h, msgID: message.id });
      }
    }, async () => {
      const info = await jsm.consumers.info(stream, 'inbox');
      return info.num_ack_pending === 0 && info.num_pending === 0 && info.delivered.stream_seq === sent.length;
    });
    const info = await jsm.consumers.info(stream, 'inbox');
    expect(info.num_redelivered).toBe(0);
  });
});

describe.skipIf(!RABBITMQ_URL)(`the inbox's dead letters on RabbitMQ (${backend.name})`, () => {
  it('keeps a message the database cannot store, whatever its bytes, as a dead letter with its reason, and acknowledges it', async () => {
    const connection = await amqp.connect(RABBITMQ_URL!);
    cleanups.push(() => connection.close());
    const channel = await connection.createConfirmChannel();
    const tag = randomBytes(4).toString('hex');
    const exchange = `t_dead_${tag}`;
    const queue = `t_dead_${tag}_inbox`;
    cleanups.push(async () => {
      await channel.deleteQueue(queue);
      await channel.deleteExchange(exchange);
    });
    // Asking about a queue not declared yet closes the channel: each question gets one of its own.
    const queueInfo = async () => {
      const probe = await connection.createChannel();
      probe.on('error', () => undefined);
      try {
        return await probe.checkQueue(queue);
      } finally {
        await probe.close().catch(() => undefined);
      }
    };
    const sent = messages(tag);
    const consumer = createAmqpConsumer({ url: RABBITMQ_URL!, exchange, queue });
    const inbox = await expectDeadLettered(consumer, sent, async () => {
      await eventually(async () => (await queueInfo()).consumerCount === 1, 'the inbox consuming');
      for (const message of sent) channel.publish(exchange, 'thing.noted', message.body, { messageId: message.id, headers: message.headers, persistent: true });
      await channel.waitForConfirms();
    }, async () => true);
    await inbox.stop();
    expect((await queueInfo()).messageCount).toBe(0);
  });
});
