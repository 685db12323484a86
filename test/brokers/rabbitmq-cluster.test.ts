import amqp, { type ChannelModel } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { relayAdmin } from '../../packages/rastro/src/outbox/relay-admin.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { checkDelivery, runWriters } from '../support/outbox-writers.js';
import { canStartRabbitMQ, startRabbitCluster, type RabbitCluster } from '../support/rabbitmq-cluster.js';
import { spawnRastro } from '../support/rastro-process.js';
import { spawnRelay } from '../support/relay-process.js';

// A private three-node RabbitMQ cluster started by the test, quorum queues, two `rastro relay`
// processes and a `rastro consume` given every node's URL, writers committing out of order
// (some held open, some rolled back), and a node killed (SIGKILL) and started again, one at a
// time, at random: the node a relay or the inbox is connected to, or one holding a queue's leader.

const postgres = postgresBackend();
const MESSAGES = Number(process.env.RASTRO_CLUSTER_MESSAGES ?? 20_000);
const KILLS = Number(process.env.RASTRO_CLUSTER_KILLS ?? 10);
const AGGREGATES = 300;
const CHECK_QUEUE = 'check';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});
const track = (cleanup: () => Promise<unknown>) => void cleanups.push(cleanup);

/** Every node running, and each queue with all three members online: the cluster is whole again. */
async function whole(cluster: RabbitCluster): Promise<void> {
  await eventually(async () => {
    const node = cluster.nodes.find((n) => n.running)!;
    const queues = JSON.parse(await cluster.ctl(node.nodename, ['list_queues', 'name', 'online', '--formatter', 'json'])) as { name: string; online: string[] }[];
    return queues.length >= 2 && queues.every((q) => q.online.length === cluster.nodes.length);
  }, 'every node back and every quorum queue member online', 120_000);
}

async function chaos(cluster: RabbitCluster, log: string[]): Promise<void> {
  for (let round = 0; round < KILLS; round++) {
    await whole(cluster);
    const victim = cluster.nodes[Math.floor(Math.random() * cluster.nodes.length)]!;
    await sleep(500 + Math.random() * 1500);
    await victim.kill();
    log.push(victim.name);
    await sleep(1000 + Math.random() * 3000);
    await victim.start();
  }
  await whole(cluster);
}

/** Every message the test's own quorum queue received, in queue order, until it stays empty. */
async function drain(connection: ChannelModel, expected: number) {
  const channel = await connection.createChannel();
  await channel.prefetch(2000);
  const got: { id: string; aggregate: string; n: number }[] = [];
  let last = Date.now();
  await channel.consume(CHECK_QUEUE, (m) => {
    if (!m) return;
    const { aggregate, n } = JSON.parse(m.content.toString()) as { aggregate: string; n: number };
    got.push({ id: m.properties.messageId as string, aggregate, n });
    channel.ack(m);
    last = Date.now();
  });
  await eventually(() => got.length >= expected && Date.now() - last > 2000, `${expected} messages on the check queue`, 120_000);
  await channel.close();
  return got;
}

describe.skipIf(!postgres || !canStartRabbitMQ)('a three-node RabbitMQ cluster with quorum queues losing a node at a time', () => {
  it(`relays ${MESSAGES} messages through ${KILLS} node kills, none lost, in order per aggregate, parking none, and the inbox stores each once`, async () => {
    const cluster = await startRabbitCluster();
    track(() => cluster.close());
    const { db, schema } = await freshSchema(postgres!);
    const inboxSchema = (await freshSchema(postgres!)).schema;
    const env = { RASTRO_BROKER_URL: cluster.url, RASTRO_AMQP_QUEUE_TYPE: 'quorum', RASTRO_POOL_SIZE: '4', RASTRO_LOG_LEVEL: 'warn' };

    // The inbox declares its quorum queue; the test's own queue sees every message the broker took.
    const inbox = await spawnRastro('inbox', ['consume', '--queue', 'rastro-inbox'], { ...env, DATABASE_URL: DATABASE_URL!, RASTRO_SCHEMA: inboxSchema }, /consuming/, track);
    const connection = await amqp.connect(cluster.nodes[0]!.url);
    track(() => connection.close());
    const setup = await connection.createChannel();
    await setup.assertExchange('rastro', 'topic', { durable: true });
    await setup.assertQueue(CHECK_QUEUE, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    await setup.bindQueue(CHECK_QUEUE, 'rastro', '#');
    await eventually(() => setup.checkQueue('rastro-inbox'), 'the inbox queue declared');
    await setup.close();
    await connection.close();

    const relays = [1, 2].map((i) => spawnRelay({ databaseUrl: DATABASE_URL!, schema, name: 'outbox', app: `rabbit_relay_${i}_${schema}`, env }));
    track(async () => {
      for (const relay of relays) relay.child.kill('SIGKILL');
      await Promise.all(relays.map((relay) => relay.exited));
    });
    await Promise.all(relays.map((relay) => relay.started));
    const writers = await runWriters(db, schema, { aggregates: AGGREGATES, messages: MESSAGES, writers: 6, heldOpen: 0.005, earlyId: 0.2, rollback: 0.05, paceMs: 60 });
    const kills: string[] = [];
    await chaos(cluster, kills);
    const committed = await writers.done;

    const store = createEventStore(db, { schema });
    const status = await eventually(async () => {
      const [relay] = await relayAdmin(store).status();
      return relay && relay.pending === relay.parked ? relay : undefined;
    }, 'the relays caught up', 300_000);
    const parked = await relayAdmin(store).parked({ limit: 3 });
    expect(status.parked, `parked: ${parked.map((p) => p.error ?? p.reason).join('; ')}`).toBe(0);

    const { rows } = await db.query<{ aggregate: string; n: number }>(`select aggregate, n from "${schema}".test_sequences`);
    const expected = new Map(rows.map((row) => [row.aggregate, row.n]));
    expect([...expected.values()].reduce((a, b) => a + b, 0)).toBe(committed);
    // The broker has every committed message; a publish retried after its node died may be there twice.
    const reader = await amqp.connect(cluster.url.split(',')[0]!);
    track(() => reader.close());
    const received = await drain(reader, committed);
    const check = checkDelivery(received, expected);
    expect(check.problems).toEqual([]);
    expect(check.unique).toBe(committed);

    // The inbox took each message into the log once, under its message id; the copies were no-ops.
    await eventually(async () => {
      const { rows: [row] } = await db.query<{ n: number }>(`select count(*)::int as n from "${inboxSchema}".events`);
      return row!.n === committed;
    }, 'the inbox stored every message', 300_000);
    const { rows: stored } = await db.query<{ id: string; aggregate: string; n: number }>(
      `select id::text, stream_id as aggregate, (data->>'n')::int as n from "${inboxSchema}".events order by position`);
    const inboxCheck = checkDelivery(stored, expected);
    expect(inboxCheck.problems).toEqual([]);
    expect(inboxCheck.unique).toBe(committed);
    expect(inboxCheck.duplicates).toBe(0);
    expect(await inbox.stop()).toBe(0);
    const [, storedCount, duplicates] = /inbox stopped: (\d+) stored, (\d+) duplicates/.exec(inbox.output()) ?? [];
    expect(Number(storedCount)).toBe(committed);
    console.log(`rabbitmq cluster: ${committed} messages committed, kills ${kills.join(', ')}; ${check.duplicates} published twice, ${duplicates} duplicate deliveries deduplicated by the inbox`);
  }, 900_000);
});
