import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { afterEach, describe, expect, it } from 'vitest';
import { relayAdmin } from '../../packages/rastro/src/outbox/relay-admin.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { canStartNats, startNatsCluster, type ClusterNode } from '../support/brokers.js';
import { DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { checkDelivery, runWriters } from '../support/outbox-writers.js';
import { spawnRastro } from '../support/rastro-process.js';
import { spawnRelay } from '../support/relay-process.js';

// A three-node JetStream cluster started by the test, an R3 stream, two `rastro relay`
// processes and a `rastro consume` pointed at all three servers, writers committing out of
// order (some held open, some rolled back), and a node killed and started again, one at a time,
// over and over; half the kills take the stream's leader, whose election is when JetStream
// answers a publish with "no responders".

const postgres = postgresBackend();
const MESSAGES = Number(process.env.RASTRO_CLUSTER_MESSAGES ?? 20_000);
const KILLS = Number(process.env.RASTRO_CLUSTER_KILLS ?? 10);
const AGGREGATES = 300;
const STREAM = 'RASTRO';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});
const track = (cleanup: () => Promise<unknown>) => void cleanups.push(cleanup);

/** The stream's leader, once it has one and every replica is current: the cluster is whole again. */
async function healthyLeader(jsm: JetStreamManager): Promise<string> {
  return eventually(async () => {
    const { cluster } = await jsm.streams.info(STREAM);
    const replicas = cluster?.replicas ?? [];
    return cluster?.leader && replicas.length === 2 && replicas.every((r) => r.current && !r.offline) ? cluster.leader : undefined;
  }, 'the stream led, with both replicas current', 60_000);
}

/** Kills a node, the stream's leader on even rounds and any node on odd ones, then starts it again. */
async function chaos(nodes: ClusterNode[], jsm: JetStreamManager, log: string[]): Promise<void> {
  for (let round = 0; round < KILLS; round++) {
    const leader = await healthyLeader(jsm);
    const victim = round % 2 === 0 ? nodes.find((node) => node.name === leader)! : nodes[Math.floor(Math.random() * nodes.length)]!;
    await sleep(500 + Math.random() * 1500);
    await victim.kill();
    log.push(`${victim.name}${victim.name === leader ? ' (leader)' : ''}`);
    await sleep(1000 + Math.random() * 3000);
    await victim.start();
  }
  await healthyLeader(jsm);
}

/** Every message of the stream, in stream order, read by a consumer of the test's own. */
async function readAll(nc: NatsConnection, jsm: JetStreamManager, expected: number) {
  // Right after a restart, the cluster may still be electing its metadata leader.
  await eventually(() => jsm.consumers.add(STREAM, { durable_name: 'check', ack_policy: AckPolicy.None }), 'a consumer of the test', 60_000);
  const consumer = await jetstream(nc).consumers.get(STREAM, 'check');
  const got: { id: string; aggregate: string; n: number }[] = [];
  let empty = 0;
  while (got.length < expected || empty < 1) {
    const batch = await consumer.fetch({ max_messages: 1000, expires: 2000 });
    let n = 0;
    for await (const m of batch) {
      const { aggregate, n: seq } = m.json<{ aggregate: string; n: number }>();
      got.push({ id: m.headers!.get('Nats-Msg-Id'), aggregate, n: seq });
      n++;
    }
    if (n === 0 && ++empty > 3) break;
  }
  return got;
}

describe.skipIf(!postgres || !canStartNats)('a three-node NATS JetStream cluster losing a node at a time', () => {
  it(`relays ${MESSAGES} messages to an R3 stream through ${KILLS} node kills, each once, in order per aggregate, parking none, and the inbox stores each once`, async () => {
    const cluster = await startNatsCluster();
    track(() => cluster.close());
    const { db, schema } = await freshSchema(postgres!);
    const inboxSchema = (await freshSchema(postgres!)).schema;
    const env = { RASTRO_BROKER_URL: cluster.url, RASTRO_NATS_REPLICAS: '3', RASTRO_POOL_SIZE: '4', RASTRO_LOG_LEVEL: 'warn' };

    const relays = [1, 2].map((i) => spawnRelay({ databaseUrl: DATABASE_URL!, schema, name: 'outbox', app: `cluster_relay_${i}_${schema}`, env }));
    track(async () => {
      for (const relay of relays) relay.child.kill('SIGKILL');
      await Promise.all(relays.map((relay) => relay.exited));
    });
    await Promise.all(relays.map((relay) => relay.started));
    const nc = await connect({ servers: cluster.url.split(','), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    track(() => nc.close());
    const jsm = await jetstreamManager(nc, { timeout: 5000 });
    const writers = await runWriters(db, schema, { aggregates: AGGREGATES, messages: Number.MAX_SAFE_INTEGER, writers: 6, heldOpen: 0.005, earlyId: 0.2, rollback: 0.05, paceMs: 60 });
    // A relay creates the stream on its first publish, with the configured replicas.
    await eventually(() => jsm.streams.info(STREAM).then((info) => info.config.num_replicas === 3), 'the R3 stream', 30_000);
    const inbox = await spawnRastro('inbox', ['consume', '--durable', 'inbox', '--ack-wait', '5'], { ...env, DATABASE_URL: DATABASE_URL!, RASTRO_SCHEMA: inboxSchema }, /consuming/, track);
    const kills: string[] = [];
    await chaos(cluster.nodes, jsm, kills);
    await eventually(() => writers.committed >= MESSAGES, `${MESSAGES} messages committed`, 300_000);
    writers.stop();
    const committed = await writers.done;

    const store = createEventStore(db, { schema });
    // Caught up: nothing pending but what is parked.
    const status = await eventually(async () => {
      const [relay] = await relayAdmin(store).status();
      return relay && relay.pending === relay.parked ? relay : undefined;
    }, 'the relays caught up', 300_000);
    expect(status.parked).toBe(0);

    const { rows } = await db.query<{ aggregate: string; n: number }>(`select aggregate, n from "${schema}".test_sequences`);
    const expected = new Map(rows.map((row) => [row.aggregate, row.n]));
    expect([...expected.values()].reduce((a, b) => a + b, 0)).toBe(committed);
    const received = await readAll(nc, jsm, committed);
    const check = checkDelivery(received, expected);
    expect(check.problems).toEqual([]);
    expect(check.unique).toBe(committed);
    // The stream's duplicate window caught every republish: each message is stored once.
    expect(check.duplicates).toBe(0);
    expect(received).toHaveLength(committed);

    // The inbox took each message into the log once, under its message id.
    await eventually(async () => {
      const { rows: [row] } = await db.query<{ n: number }>(`select count(*)::int as n from "${inboxSchema}".events`);
      return row!.n === committed;
    }, 'the inbox stored every message', 300_000);
    const { rows: stored } = await db.query<{ id: string; aggregate: string; n: number }>(
      `select id::text, stream_id as aggregate, (data->>'n')::int as n from "${inboxSchema}".events order by position`);
    const inboxCheck = checkDelivery(stored, expected);
    expect(inboxCheck.problems).toEqual([]);
    expect(inboxCheck.unique).toBe(committed);
    console.log(`nats cluster: ${committed} messages committed, kills ${kills.join(', ')}; inbox output: ${inbox.output().trim().split('\n').slice(-2).join(' | ')}`);
  }, 900_000);
});
