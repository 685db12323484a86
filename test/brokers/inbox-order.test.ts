import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import amqp from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { createAmqpPublisher } from '../../packages/rastro/src/brokers/amqp.js';
import type { Publisher } from '../../packages/rastro/src/brokers/message.js';
import { createNatsPublisher } from '../../packages/rastro/src/brokers/nats.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { NATS_URL, RABBITMQ_URL } from '../support/brokers.js';
import { DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { spawnRastro, type RastroProcess } from '../support/rastro-process.js';

// Two `rastro consume` processes on one durable (NATS) or queue (RabbitMQ), the reading one
// killed again and again while messages arrive: every aggregate's messages land in its stream in
// the order they were published.

const backend = postgresBackend();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});
const track = (cleanup: () => Promise<unknown>) => void cleanups.push(cleanup);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const AGGREGATES = 20;
const PER_AGGREGATE = 30;

interface Setup {
  env: Record<string, string>;
  args: string[];
  publisher: Publisher;
  /** What the broker says of the reader's settings (--ack-wait, --max-ack-pending). */
  settings?(): Promise<unknown>;
}

async function natsSetup(tag: string): Promise<Setup> {
  const nc = await connect({ servers: NATS_URL! });
  const jsm = await jetstreamManager(nc);
  const stream = `T_ORDER_${tag}`;
  await jsm.streams.add({ name: stream, subjects: [`torder${tag}.>`] });
  track(async () => {
    await jsm.streams.delete(stream);
    await nc.close();
  });
  const publisher = createNatsPublisher({ url: NATS_URL!, stream, subjectPrefix: `torder${tag}` });
  track(() => publisher.close());
  const settings = async () => {
    const { config } = await jsm.consumers.info(stream, 'inbox');
    return { ackWaitMs: (config.ack_wait ?? 0) / 1_000_000, maxAckPending: config.max_ack_pending };
  };
  return { env: { RASTRO_BROKER_URL: NATS_URL!, RASTRO_NATS_STREAM: stream }, args: ['--durable', 'inbox', '--ack-wait', '2', '--max-ack-pending', '64'], publisher, settings };
}

async function amqpSetup(tag: string): Promise<Setup> {
  const exchange = `t_order_${tag}`;
  const queue = `t_order_${tag}_inbox`;
  track(async () => {
    const connection = await amqp.connect(RABBITMQ_URL!);
    const channel = await connection.createChannel();
    await channel.deleteQueue(queue);
    await channel.deleteExchange(exchange);
    await connection.close();
  });
  const publisher = createAmqpPublisher({ url: RABBITMQ_URL!, exchange });
  track(() => publisher.close());
  return { env: { RASTRO_BROKER_URL: RABBITMQ_URL!, RASTRO_AMQP_EXCHANGE: exchange }, args: ['--queue', queue, '--max-ack-pending', '64'], publisher };
}

const brokers = [
  ...(NATS_URL ? [{ name: 'NATS JetStream', setup: natsSetup }] : []),
  ...(RABBITMQ_URL ? [{ name: 'RabbitMQ', setup: amqpSetup }] : []),
];

// Without a broker, one skipped case (an empty each would be a file without a suite).
const cases = brokers.length > 0 ? brokers : [{ name: 'a broker (none configured)', setup: natsSetup }];

describe.skipIf(!backend || brokers.length === 0).each(cases)('the inbox order on $name', ({ setup }) => {
  it('keeps each aggregate in publish order with two consumers, the reading one SIGKILLed three times', async () => {
    const { db, schema } = await freshSchema(backend!);
    const store = createEventStore(db, { schema });
    const tag = randomBytes(4).toString('hex');
    const { env: brokerEnv, args, publisher, settings } = await setup(tag);
    const env = { DATABASE_URL: DATABASE_URL!, RASTRO_SCHEMA: schema, RASTRO_LOG_LEVEL: 'warn', ...brokerEnv };
    const consumers: RastroProcess[] = [];
    const start = async () => {
      const consumer = await spawnRastro(`consume ${consumers.length + 1}`, ['consume', ...args], env, /consuming from|standing by/, track);
      consumers.push(consumer);
      return consumer;
    };
    const reading = () => consumers.find((c) => c.child.exitCode === null && c.child.signalCode === null && /consuming from/.test(c.output()));
    await start();
    await eventually(() => reading(), 'the first consumer reading');
    // The durable as the flags set it (RabbitMQ's prefetch is the channel's, not visible from a client).
    if (settings) expect(await eventually(() => settings(), 'the durable created')).toEqual({ ackWaitMs: 2000, maxAckPending: 64 });
    const second = await start();
    expect(second.output()).toMatch(/standing by: another rastro consume reads the/);

    // Published in rounds, one message per aggregate each, so every aggregate is in flight at every kill.
    const published = (async () => {
      for (let n = 0; n < PER_AGGREGATE; n++) {
        for (let a = 0; a < AGGREGATES; a++) {
          await publisher.publish({ id: crypto.randomUUID(), aggregateType: 'thing', aggregateId: `t${a}`, type: 'thing.counted', payload: { n }, headers: {}, traceparent: null, occurredAt: new Date() });
        }
        await sleep(20);
      }
    })();
    for (let kill = 0; kill < 3; kill++) {
      await sleep(400);
      const victim = await eventually(() => reading(), `a consumer reading before kill ${kill + 1}`, 30_000);
      victim.child.kill('SIGKILL');
      await victim.exited;
      await start();
    }
    await published;

    const counts = async () => (await db.query<{ n: number }>(`select count(*)::int as n from "${schema}".events`)).rows[0]!.n;
    await eventually(async () => (await counts()) === AGGREGATES * PER_AGGREGATE, 'every message in the log', 60_000);
    for (let a = 0; a < AGGREGATES; a++) {
      const events = await store.readStream(`t${a}`);
      expect(events.map((e) => (e.data as { n: number }).n), `t${a}`).toEqual(Array.from({ length: PER_AGGREGATE }, (_, n) => n));
    }
    for (const consumer of consumers.filter((c) => c.child.exitCode === null && c.child.signalCode === null)) expect(await consumer.stop()).toBe(0);
  });
});
