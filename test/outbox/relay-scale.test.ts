import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import { connect } from '@nats-io/transport-node';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { relayAdmin } from '../../packages/rastro/src/outbox/relay-admin.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';
import { NATS_URL, RABBITMQ_URL } from '../support/brokers.js';
import { eventually } from '../support/eventually.js';
import { checkDelivery, runWriters } from '../support/outbox-writers.js';
import { spawnRelay } from '../support/relay-process.js';

const postgres = postgresBackend();
const MESSAGES = Number(process.env.RASTRO_SCALE_MESSAGES ?? 50_000);
const AGGREGATES = 500;

type Received = { id: string; aggregate: string; n: number };

describe.skipIf(!postgres || !NATS_URL || !RABBITMQ_URL)('three relays per broker, on real PostgreSQL, NATS JetStream and RabbitMQ', () => {
  it(`deliver ${MESSAGES} messages over ${AGGREGATES} aggregates, written out of commit order, once each and in order per aggregate`, async () => {
    const { db, schema } = await freshSchema(postgres!);
    const tag = randomBytes(4).toString('hex');
    const stream = `T_${tag}`;
    const exchange = `t_${tag}`;
    const queue = `t_${tag}_all`;

    const nc = await connect({ servers: NATS_URL! });
    const jsm = await jetstreamManager(nc);
    const rabbit = await amqp.connect(RABBITMQ_URL!);
    const channel = await rabbit.createChannel();
    await channel.assertExchange(exchange, 'topic', { durable: true });
    await channel.assertQueue(queue, { durable: true });
    await channel.bindQueue(queue, exchange, '#');
    const fromRabbit: Received[] = [];
    await channel.consume(queue, (m) => {
      if (!m) return;
      const { aggregate, n } = JSON.parse(m.content.toString()) as { aggregate: string; n: number };
      fromRabbit.push({ id: m.properties.messageId, aggregate, n });
      channel.ack(m);
    });

    const env = { RASTRO_SUBJECT_PREFIX: `t${tag}`, RASTRO_NATS_STREAM: stream, RASTRO_AMQP_EXCHANGE: exchange, RASTRO_LOG_LEVEL: 'silent' };
    const relays = [
      ...[1, 2, 3].map((i) => spawnRelay({ databaseUrl: DATABASE_URL!, schema, name: 'nats', app: `scale_nats_${i}_${tag}`, env: { ...env, RASTRO_BROKER_URL: NATS_URL! } })),
      ...[1, 2, 3].map((i) => spawnRelay({ databaseUrl: DATABASE_URL!, schema, name: 'amqp', app: `scale_amqp_${i}_${tag}`, env: { ...env, RASTRO_BROKER_URL: RABBITMQ_URL! } })),
    ];
    try {
      await Promise.all(relays.map((relay) => relay.started));
      const writers = await runWriters(db, schema, { aggregates: AGGREGATES, messages: MESSAGES, writers: 8, heldOpen: 0.002, earlyId: 0.2, rollback: 0.05 });
      const committed = await writers.done;
      const store = createEventStore(db, { schema });
      await eventually(async () => {
        const status = await relayAdmin(store).status();
        return status.length === 2 && status.every((relay) => relay.pending === 0);
      }, 'both relay groups caught up', 240_000);

      const { rows } = await db.query<{ aggregate: string; n: number }>(`select aggregate, n from "${schema}".test_sequences`);
      const expected = new Map(rows.map((row) => [row.aggregate, row.n]));
      expect([...expected.values()].reduce((a, b) => a + b, 0)).toBe(committed);

      await eventually(() => fromRabbit.length >= committed, 'every message on the RabbitMQ queue', 60_000);
      const rabbitCheck = checkDelivery(fromRabbit, expected);
      expect(rabbitCheck.problems).toEqual([]);
      expect(rabbitCheck.unique).toBe(committed);
      // Three relays, one pass: no message was published twice.
      expect(rabbitCheck.duplicates).toBe(0);

      await jsm.consumers.add(stream, { durable_name: 'check', ack_policy: AckPolicy.None });
      const consumer = await jetstream(nc).consumers.get(stream, 'check');
      const fromNats: Received[] = [];
      while (fromNats.length < committed) {
        const batch = await consumer.fetch({ max_messages: 1000, expires: 2000 });
        let got = 0;
        for await (const m of batch) {
          const { aggregate, n } = m.json<{ aggregate: string; n: number }>();
          fromNats.push({ id: m.headers!.get('Nats-Msg-Id'), aggregate, n });
          got++;
        }
        if (got === 0) break;
      }
      const natsCheck = checkDelivery(fromNats, expected);
      expect(natsCheck.problems).toEqual([]);
      expect(natsCheck.unique).toBe(committed);
      const counters = (await relayAdmin(store).status()).map((relay) => [relay.name, relay.counters.published]);
      console.log(`scale: ${committed} messages committed; published ${JSON.stringify(counters)}`);
    } finally {
      for (const relay of relays) relay.child.kill('SIGTERM');
      await Promise.all(relays.map((relay) => relay.exited));
      await jsm.streams.delete(stream).catch(() => undefined);
      await channel.deleteQueue(queue).catch(() => undefined);
      await channel.deleteExchange(exchange).catch(() => undefined);
      await rabbit.close();
      await nc.close();
    }
  }, 600_000);
});
